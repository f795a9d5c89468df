#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/json_format.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using nlohmann::json;

Plan small_plan() {
  Cluster cluster;
  cluster.num_devices = 3;
  cluster.devices_per_host = 2;
  cluster.memory_per_device_bytes = 1ll << 30;
  cluster.optimizer = Optimizer::kRowwiseAdagrad;
  Plan plan = make_planner("size_lookup_greedy", testing::planner_config())->plan(testing::varied_tables(7), cluster);
  plan.seed = 5;
  return plan;
}

TEST(PlanIo, WritesTheDocumentedFormat) {
  json doc = json::parse(plan_to_string(small_plan()));
  EXPECT_EQ(doc["format"], "shard-plan/1");
  EXPECT_EQ(doc["algorithm"], "size_lookup_greedy");
  EXPECT_EQ(doc["num_devices"], 3);
  EXPECT_EQ(doc["devices_per_host"], 2);
  EXPECT_EQ(doc["memory_per_device_bytes"], 1ll << 30);
  EXPECT_EQ(doc["seed"], 5);
  EXPECT_EQ(doc["optimizer"], "rowwise_adagrad");
  ASSERT_EQ(doc["tables"].size(), 7u);
  const json& t = doc["tables"][0];
  EXPECT_EQ(t["sharding_type"], "table_wise");
  EXPECT_EQ(t["compute_kernel"], "fused");
  int rank = t["shards"][0]["rank"];
  EXPECT_EQ(t["ranks"], json::array({rank}));
  EXPECT_EQ(t["shards"][0]["shard_offsets"], json::array({0, 0}));
  EXPECT_EQ(t["shards"][0]["shard_sizes"], json::array({t["rows"], t["dim"]}));
  EXPECT_EQ(t["shards"][0]["placement"], "rank:" + std::to_string(rank) + "/cuda:" + std::to_string(rank % 2));
  ASSERT_EQ(doc["devices"].size(), 3u);
  EXPECT_TRUE(doc["devices"][0]["compute_ms"].is_null());  // no cost model yet
  EXPECT_TRUE(doc["summary"]["max_total_ms"].is_null());
  EXPECT_FALSE(doc["summary"].contains("planning_seconds"));  // a timing would break byte-identical plans
  int64_t memory = 0;
  for (const auto& d : doc["devices"]) memory += d["memory_bytes"].get<int64_t>();
  int64_t expected = 0;
  for (const auto& table : doc["tables"]) {
    expected += shard_memory_bytes(table["rows"], table["dim"], DType::kFp32, Optimizer::kRowwiseAdagrad);
  }
  EXPECT_EQ(memory, expected);
}

TEST(PlanIo, WritesPredictedCostsWhenScored) {
  Plan plan = small_plan();
  plan.cost_model = "test-model";
  plan.device_costs = std::vector<DeviceCost>{{1.0, 0.5, 0.25}, {2.0, 0.5, 0.5}, {0.5, 0.0, 0.0}};
  json doc = json::parse(plan_to_string(plan));
  EXPECT_EQ(doc["cost_model"], "test-model");
  EXPECT_DOUBLE_EQ(doc["devices"][1]["total_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(doc["summary"]["max_total_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(doc["summary"]["mean_total_ms"].get<double>(), (1.75 + 3.0 + 0.5) / 3);
}

TEST(PlanIo, SerialisationIsDeterministic) { EXPECT_EQ(plan_to_string(small_plan()), plan_to_string(small_plan())); }

TEST(JsonFormat, KeepsFlatContainersOnOneLineAndRoundTrips) {
  nlohmann::ordered_json doc = {{"a", 1},
                                {"list", {1, 2, 3}},
                                {"shards", {{{"rank", 0}, {"sizes", {4, 8}}}, {{"rank", 1}, {"sizes", {4, 8}}}}},
                                {"empty", nlohmann::ordered_json::array()},
                                {"text", "q\"uote"}};
  std::string text = dump_readable(doc);
  EXPECT_NE(text.find("\"list\": [1, 2, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("{\"rank\": 0, \"sizes\": [4, 8]}"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::ordered_json::parse(text), doc);
}

}  // namespace
}  // namespace shardplan
