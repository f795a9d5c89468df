#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"
#include "torchrec_planner.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;
using testing::varied_tables;

ValidationResult validate(const Plan& plan, const std::vector<Table>& tables) {
  return validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
}

// Conformance: every planner gives a valid plan covering every table's columns once, table-wise unless
// it chooses sharding types (tables of the other types are checked by the validator alone).
class EveryPlanner : public ::testing::TestWithParam<std::string> {};
// Planners that may split tables and give them the other sharding types.
bool chooses_types(const std::string& planner) { return planner == "neuroshard" || planner == "torchrec_all_types"; }
// Planners that may split a table column-wise.
bool splits_columns(const std::string& planner) { return chooses_types(planner) || planner == "torchrec_cw32"; }

TEST_P(EveryPlanner, ProducesValidPlans) {
  auto tables = varied_tables(60);
  for (int devices : {1, 4, 8, 128}) {
    Cluster cluster = cluster_of(devices, 16ll << 30);
    Plan plan = make_planner(GetParam(), testing::planner_config(7))->plan(tables, cluster);
    EXPECT_EQ(plan.algorithm, GetParam());
    ASSERT_EQ(plan.tables.size(), tables.size());
    for (std::size_t i = 0; i < tables.size(); ++i) {
      EXPECT_EQ(plan.tables[i].name, tables[i].name);
      const ShardingType type = plan.tables[i].type;
      if (type != ShardingType::kTableWise && type != ShardingType::kColumnWise) {
        EXPECT_TRUE(chooses_types(GetParam())) << plan.tables[i].name;
        continue;
      }
      int64_t next_col = 0;
      for (const auto& shard : plan.tables[i].shards) {
        EXPECT_EQ(shard.col_offset, next_col);
        next_col += shard.cols;
      }
      EXPECT_EQ(next_col, tables[i].dim);
      if (GetParam() == "torchrec_cw32" && type == ShardingType::kColumnWise) {
        for (const auto& shard : plan.tables[i].shards) EXPECT_EQ(shard.cols, torchrec_column_width(tables[i].dim, 32));
      } else if (!chooses_types(GetParam())) {
        ASSERT_EQ(plan.tables[i].shards.size(), 1u);
        EXPECT_EQ(plan.tables[i].type, ShardingType::kTableWise);
      }
    }
    auto result = validate(plan, tables);
    EXPECT_TRUE(result.valid()) << GetParam() << " on " << devices << ": " << result.problems.front();
  }
}

TEST_P(EveryPlanner, RespectsTightMemoryWithOptimizerState) {
  auto tables = varied_tables(40);
  int64_t total = 0;
  for (const auto& t : tables) total += table_memory_bytes(t, Optimizer::kAdam);
  Cluster cluster = cluster_of(8, total / 8 * 13 / 10);  // 30% headroom over a perfect split
  cluster.optimizer = Optimizer::kAdam;
  Plan plan = make_planner(GetParam(), testing::planner_config(3))->plan(tables, cluster);
  for (const auto& usage : device_usage(plan)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
  EXPECT_TRUE(validate(plan, tables).valid());
}

TEST_P(EveryPlanner, RefusesATableLargerThanAnyDevice) {
  if (splits_columns(GetParam())) GTEST_SKIP() << "splits such a table (neuroshard_test, torchrec_planner_test)";
  std::vector<Table> tables = {make_table("small", 100, 4), make_table("huge", 1'000'000, 128)};
  try {
    make_planner(GetParam(), testing::planner_config())->plan(tables, cluster_of(4, 100ll << 20));
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    EXPECT_EQ(e.code(), ExitCode::kInfeasible);
    EXPECT_NE(std::string(e.what()).find("\"huge\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("488.28 MiB"), std::string::npos) << e.what();
  }
}

TEST_P(EveryPlanner, RefusesTablesLargerThanTheCluster) {
  std::vector<Table> tables;
  for (int i = 0; i < 10; ++i) tables.push_back(make_table("t" + std::to_string(i), 1'000'000, 32));  // 128 MB each
  try {
    make_planner(GetParam(), testing::planner_config())->plan(tables, cluster_of(4, 200'000'000));
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("in total"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, EveryPlanner, ::testing::ValuesIn(planner_names()));

TEST(Baselines, PackingFailureNamesTheTableAndTheMostFreeDevice) {
  // Three 60 MB tables on two 100 MB devices: the total fits, no packing does.
  std::vector<Table> tables = {make_table("a", 3'750'000, 4), make_table("b", 3'750'000, 4),
                               make_table("c", 3'750'000, 4)};
  try {
    make_planner("size_greedy", testing::planner_config())->plan(tables, cluster_of(2, 100'000'000));
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("table \"c\" needs 57.22 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("the most free is device"), std::string::npos) << message;
  }
}

TEST(Baselines, DimGreedyBalancesWidths) {
  std::vector<Table> tables = {make_table("a", 10, 64), make_table("b", 10, 32), make_table("c", 10, 32)};
  Plan plan = make_planner("dim_greedy", testing::planner_config())->plan(tables, cluster_of(2, 1 << 20));
  auto usage = device_usage(plan);
  EXPECT_EQ(usage[0].dim_sum, 64);
  EXPECT_EQ(usage[1].dim_sum, 64);
}

TEST(Baselines, LookupGreedyWeighsByDimTimesPoolingFactor) {
  // a: 4 x 100 = 400, b: 128 x 1 = 128, c: 128 x 1 = 128, d: 128 x 1 = 128.
  std::vector<Table> tables = {make_table("a", 10, 4, 100.0), make_table("b", 10, 128), make_table("c", 10, 128),
                               make_table("d", 10, 128)};
  Plan plan = make_planner("lookup_greedy", testing::planner_config())->plan(tables, cluster_of(2, 1 << 20));
  EXPECT_EQ(plan.tables[0].shards[0].rank, 0);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(plan.tables[static_cast<std::size_t>(i)].shards[0].rank, 1);
}

TEST(Baselines, RandomIsSeeded) {
  auto tables = varied_tables(50);
  Cluster cluster = cluster_of(16, 16ll << 30);
  auto a = plan_to_string(make_planner("random", testing::planner_config(1))->plan(tables, cluster));
  auto b = plan_to_string(make_planner("random", testing::planner_config(1))->plan(tables, cluster));
  auto c = plan_to_string(make_planner("random", testing::planner_config(2))->plan(tables, cluster));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Baselines, UnknownPlannerIsBadInput) {
  try {
    make_planner("magic", testing::planner_config());
    FAIL();
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "planner");
    EXPECT_EQ(e.rule().rfind("unknown planner \"magic\" (known: neuroshard, ", 0), 0u) << e.rule();
  }
}

}  // namespace
}  // namespace shardplan
