// What shard-plan hands the Python side: traces (gen-traces) and TorchRec's planner (torchrec_planner),
// which without the Python stack is refused with how to install it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kTables = source_path("data/examples/tables-4gpu.json");

struct Traces {
  nlohmann::json header;
  std::string body;
  std::vector<int64_t> array(std::size_t at, std::size_t count) const {
    std::vector<int64_t> out(count);
    std::memcpy(out.data(), body.data() + at, count * sizeof(int64_t));
    return out;
  }
};

Traces read_traces(const std::string& path) {
  std::string text = read_file(path);
  const std::size_t end = text.find('\n');
  return {nlohmann::json::parse(text.substr(0, end)), text.substr(end + 1)};
}

TEST(GenTracesCli, WritesEveryTablesBatchAsDocumented) {
  TempDir dir;
  CliResult r =
      run_cli({"gen-traces", "--tables", kTables, "--batch-size", "512", "--seed", "3", "-o", dir.path("t.bin"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Traces t = read_traces(dir.path("t.bin"));
  EXPECT_EQ(t.header["format"], "shard-plan-traces/1");
  EXPECT_EQ(t.header["batch_size"], 512);
  EXPECT_EQ(t.header["byte_order"], "little");
  auto tables = nlohmann::json::parse(read_file(kTables));
  ASSERT_EQ(t.header["tables"].size(), tables.is_array() ? tables.size() : tables["tables"].size());
  std::size_t bytes = 0;
  for (const auto& entry : t.header["tables"]) {
    const auto lookups = entry["lookups"].get<std::size_t>();
    std::vector<int64_t> indices = t.array(entry["indices_at"], lookups);
    std::vector<int64_t> offsets = t.array(entry["offsets_at"], 513);
    EXPECT_EQ(offsets.front(), 0);
    EXPECT_EQ(offsets.back(), static_cast<int64_t>(lookups)) << entry["name"];
    for (int64_t i : indices) ASSERT_TRUE(i >= 0 && i < entry["rows"].get<int64_t>()) << entry["name"];
    bytes += (lookups + 513) * sizeof(int64_t);
  }
  EXPECT_EQ(t.body.size(), bytes);
}

TEST(GenTracesCli, TheSeedDecidesTheTraces) {
  TempDir dir;
  for (const char* name : {"a", "b"}) {
    ASSERT_EQ(run_cli({"gen-traces", "--tables", kTables, "--seed", "5", "-o", dir.path(name), "-q"}).exit_code, 0);
  }
  ASSERT_EQ(run_cli({"gen-traces", "--tables", kTables, "--seed", "6", "-o", dir.path("c"), "-q"}).exit_code, 0);
  EXPECT_EQ(read_file(dir.path("a")), read_file(dir.path("b")));
  EXPECT_NE(read_file(dir.path("a")), read_file(dir.path("c")));
}

TEST(GenTracesCli, BadBatchIsBadUsage) {
  TempDir dir;
  CliResult r = run_cli({"gen-traces", "--tables", kTables, "--batch-size", "0", "-o", dir.path("t"), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch-size: must be 1 to"), std::string::npos) << r.err;
  EXPECT_TRUE(dir.files().empty());
}

TEST(TorchRecPlannerCli, WithoutThePythonStackSaysHowToInstallIt) {
  TempDir dir;
  ::setenv("SHARDPLAN_PYTHON", "/nonexistent/python3", 1);
  CliResult plan =
      run_cli({"--tables", kTables, "--gpus", "4", "--algo", "torchrec_planner", "-o", dir.path("p.json")});
  CliResult bench = run_cli(
      {"bench", "--tasks", source_path("data/tasks/paper-4gpu.json"), "--algos", "neuroshard,torchrec_planner_cpu"});
  ::unsetenv("SHARDPLAN_PYTHON");
  for (const CliResult& r : {plan, bench}) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("scripts/setup-python.sh"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/python3"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(dir.files().empty());
}

}  // namespace
}  // namespace shardplan::e2e
