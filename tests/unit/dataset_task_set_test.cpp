#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "shardplan/core/errors.hpp"
#include "shardplan/dataset/pool_generator.hpp"
#include "shardplan/dataset/task_generator.hpp"
#include "shardplan/dataset/task_set.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using nlohmann::json;

const std::vector<Table>& pool() {
  static const std::vector<Table> tables = generate_pool(PoolConfig{});
  return tables;
}

std::map<std::string, const Table*> by_name() {
  std::map<std::string, const Table*> index;
  for (const auto& t : pool()) index[t.name] = &t;
  return index;
}

void expect_protocol(const TaskSet& set, int devices, int min_tables, int max_tables) {
  ASSERT_EQ(set.tasks.size(), 100u);
  EXPECT_EQ(set.num_devices, devices);
  EXPECT_EQ(set.memory_per_device_bytes, 4ll << 30);
  auto index = by_name();
  const int64_t device = set.memory_per_device_bytes;
  for (const auto& task : set.tasks) {
    int n = static_cast<int>(task.tables.size());
    EXPECT_GE(n, min_tables);
    EXPECT_LE(n, max_tables);
    int64_t total = 0;
    std::string previous;
    for (const auto& t : task.tables) {
      EXPECT_EQ(t.dim % 4, 0);
      EXPECT_GE(t.dim, 4);
      EXPECT_LE(t.dim, 128);
      int64_t bytes = table_memory_bytes(t, Optimizer::kSgd);
      EXPECT_LE(bytes, device) << t.name;
      total += bytes;
      // Traces back to the pool: same table but for its width.
      ASSERT_EQ(index.count(t.name), 1u) << t.name;
      const Table& source = *index.at(t.name);
      EXPECT_EQ(t.rows, source.rows);
      EXPECT_EQ(t.pooling_factor, source.pooling_factor);
      EXPECT_EQ(t.reuse_hist, source.reuse_hist);
      EXPECT_NE(t.name, previous);
      previous = t.name;
    }
    EXPECT_LE(total, device * devices);
  }
}

TEST(DatasetTaskSet, PaperProtocolOn4Gpus) {
  TaskSet set = generate_task_set(pool(), protocol_config(TaskProtocol::kPaper4Gpu, 1));
  EXPECT_EQ(set.name, "paper-4gpu");
  expect_protocol(set, 4, 10, 60);
  TaskSetSummary summary = summarize_task_set(set);
  EXPECT_LT(summary.min_tables, 20);  // counts spread over the range
  EXPECT_GT(summary.max_tables, 50);
  EXPECT_LE(summary.max_memory_fraction, 1.0);
}

TEST(DatasetTaskSet, PaperProtocolOn8Gpus) {
  TaskSet set = generate_task_set(pool(), protocol_config(TaskProtocol::kPaper8Gpu, 1));
  expect_protocol(set, 8, 20, 120);
}

TEST(DatasetTaskSet, WholePoolOn128GpusFitsTableWise) {
  TaskSet set = generate_task_set(pool(), protocol_config(TaskProtocol::kAll128Gpu, 1));
  ASSERT_EQ(set.tasks.size(), 1u);
  EXPECT_EQ(set.num_devices, 128);
  ASSERT_EQ(set.tasks[0].tables.size(), pool().size());
  for (std::size_t i = 0; i < pool().size(); ++i) {
    EXPECT_EQ(set.tasks[0].tables[i].name, pool()[i].name);
    EXPECT_EQ(set.tasks[0].tables[i].dim, pool()[i].dim);
  }
  Plan plan = make_planner("size_greedy", testing::planner_config())->plan(set.tasks[0].tables, set.cluster());
  EXPECT_EQ(plan.tables.size(), pool().size());
  EXPECT_EQ(summarize_task_set(set).greedy_placeable, 1);
}

TEST(DatasetTaskSet, SameSeedSameSetOtherSeedOtherSet) {
  TaskSetConfig config = protocol_config(TaskProtocol::kPaper4Gpu, 5);
  config.num_tasks = 10;
  std::string a = format_task_set(generate_task_set(pool(), config));
  std::string b = format_task_set(generate_task_set(pool(), config));
  config.seed = 6;
  std::string c = format_task_set(generate_task_set(pool(), config));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(DatasetTaskSet, FileTextRoundTripsAndMatchesTheJsonForm) {
  TaskSetConfig config = protocol_config(TaskProtocol::kPaper8Gpu, 3);
  config.num_tasks = 5;
  TaskSet set = generate_task_set(pool(), config);
  std::string text = format_task_set(set);
  json doc = json::parse(text);
  EXPECT_EQ(nlohmann::ordered_json::parse(text), task_set_to_json(set));
  // The loader renormalises histograms (by a few ulps here); the file's six decimals survive.
  TaskSet back = parse_task_set(doc, "tasks.json");
  EXPECT_EQ(format_task_set(back), text);
  EXPECT_EQ(back.cluster().num_devices, 8);
  EXPECT_EQ(back.cluster().memory_per_device_bytes, 4ll << 30);
}

// The setting an error names, in the library's terms, and its exit code.
std::pair<std::string, ExitCode> refused(const TaskSetConfig& config) {
  try {
    generate_task_set(pool(), config);
  } catch (const Error& e) {
    return {e.setting(), e.code()};
  }
  return {"", ExitCode::kOk};
}

TEST(DatasetTaskSet, ImpossibleConfigsFailFast) {
  TaskSetConfig config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.memory_per_device_bytes = 1024;
  EXPECT_THROW(generate_task_set(pool(), config), InfeasibleSetting);
  EXPECT_EQ(refused(config), std::make_pair(std::string("fewest tables per task"), ExitCode::kInfeasible));
  config = protocol_config(TaskProtocol::kAll128Gpu, 1);
  config.memory_per_device_bytes = 1 << 20;  // the whole pool cannot be fewer tables: the memory is blamed
  EXPECT_EQ(refused(config), std::make_pair(std::string("memory per GPU"), ExitCode::kInfeasible));
  config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.max_tables = 10'000;
  EXPECT_EQ(refused(config), std::make_pair(std::string("most tables per task"), ExitCode::kBadInput));
  config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.min_tables = 70;
  EXPECT_EQ(refused(config), std::make_pair(std::string("fewest tables per task"), ExitCode::kBadInput));
  config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.num_tasks = 0;
  EXPECT_EQ(refused(config), std::make_pair(std::string("tasks"), ExitCode::kBadInput));
  config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.num_devices = 0;  // the cluster's own check
  EXPECT_EQ(refused(config), std::make_pair(std::string("GPUs"), ExitCode::kBadInput));
  config = protocol_config(TaskProtocol::kPaper4Gpu, 1);
  config.max_width = 6;
  EXPECT_EQ(refused(config), std::make_pair(std::string("largest width"), ExitCode::kBadInput));
  EXPECT_FALSE(parse_task_protocol("paper-16gpu").has_value());
  EXPECT_EQ(parse_task_protocol("all-128gpu"), TaskProtocol::kAll128Gpu);
}

std::string load_error(const json& doc) {
  try {
    parse_task_set(doc, "tasks.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

json valid_doc() {
  json table = {{"name", "t1"}, {"rows", 1000}, {"dim", 16}, {"pooling_factor", 2.5}};
  return {{"name", "x"},
          {"num_devices", 4},
          {"memory_per_device_bytes", 1 << 30},
          {"tasks", json::array({json{{"tables", json::array({table})}}, json{{"tables", json::array({table})}}})}};
}

TEST(DatasetTaskSet, LoaderErrorsNameFilePathAndValue) {
  EXPECT_EQ(load_error(valid_doc()), "(no error)");

  json doc = valid_doc();
  doc.erase("num_devices");
  EXPECT_EQ(load_error(doc), "tasks.json: num_devices: missing required field");

  doc = valid_doc();
  doc["num_devices"] = 0;
  EXPECT_EQ(load_error(doc), "tasks.json: num_devices: must be an integer in [1, 65536], got 0");

  doc = valid_doc();
  doc["memory_per_device_bytes"] = "4GiB";
  EXPECT_EQ(load_error(doc),
            "tasks.json: memory_per_device_bytes: must be an integer in [1, 9223372036854775807], got \"4GiB\"");

  doc = valid_doc();
  doc["tasks"][1]["tables"][0]["dim"] = 13;
  EXPECT_EQ(load_error(doc), "tasks.json: tasks[1].tables[0].dim: must be a positive multiple of 4, got 13");

  doc = valid_doc();
  doc["tasks"][0]["tables"].push_back(doc["tasks"][0]["tables"][0]);
  EXPECT_EQ(load_error(doc), "tasks.json: tasks[0].tables[1].name: duplicate name \"t1\" (also tasks[0].tables[0])");

  doc = valid_doc();
  doc["tasks"][0].erase("tables");
  EXPECT_EQ(load_error(doc), "tasks.json: tasks[0].tables: missing required field");

  doc = valid_doc();
  doc["tasks"] = json::array();
  EXPECT_EQ(load_error(doc), "tasks.json: tasks: must hold at least one task, got []");

  doc = valid_doc();
  doc["tasks"][0] = 7;
  EXPECT_EQ(load_error(doc), "tasks.json: tasks[0]: must be an object, got 7");

  EXPECT_NE(load_error(json::array()).find("tasks.json: expected a task set object"), std::string::npos);

  try {
    load_task_set("/nonexistent/tasks.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tasks.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace shardplan
