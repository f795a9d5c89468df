// The files in data/ are what the documented commands (docs/dataset.md) regenerate, byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "shardplan/core/tables_io.hpp"
#include "shardplan/dataset/data_files.hpp"
#include "shardplan/dataset/pool_generator.hpp"
#include "shardplan/dataset/task_generator.hpp"

namespace shardplan {
namespace {

// tests/unit/<this file> -> the repository root.
std::filesystem::path repo_root() { return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path(); }

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DatasetShippedData, PoolAndTaskSetsAreRegeneratedByteForByte) {
  const auto data = repo_root() / "data";
  if (!std::filesystem::exists(data / "pool.json")) GTEST_SKIP() << "no data/pool.json beside the sources";
  // shard-plan gen-pool --seed 1 -o data/pool.json
  PoolConfig config;
  config.seed = 1;
  std::vector<Table> pool = generate_pool(config);
  EXPECT_EQ(
      format_pool_file(pool, "shard-plan gen-pool --seed 1 --num-tables 856 --batch 65536 --mean-pooling-factor 15.8"),
      read_text(data / "pool.json"));
  // shard-plan gen-tasks --pool data/pool.json --protocol <p> --seed 1 -o data/tasks/<p>.json
  std::vector<Table> loaded = load_tables((data / "pool.json").string());
  for (TaskProtocol protocol : {TaskProtocol::kPaper4Gpu, TaskProtocol::kPaper8Gpu, TaskProtocol::kAll128Gpu}) {
    std::string name(task_protocol_name(protocol));
    TaskSet set = generate_task_set(loaded, protocol_config(protocol, 1));
    EXPECT_EQ(format_task_set(set), read_text(data / "tasks" / (name + ".json"))) << name;
  }
}

}  // namespace
}  // namespace shardplan
