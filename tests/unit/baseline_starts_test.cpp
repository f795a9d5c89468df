// "neuroshard" as make_planner builds it: the search, with the baselines' plans as other starting points
// (baseline_starts.hpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/baseline_comparison.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;

double cost(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  return max_total_ms(score_plan(plan, tables, model));
}

void expect_valid_and_fitting(const Plan& plan, const std::vector<Table>& tables, const Cluster& cluster) {
  const auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
  for (const auto& usage : device_usage(plan)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
}

// A table of 4 columns larger than any GPU: no column split holds it, row blocks do. The search starts it
// as row-wise blocks itself; without row-wise allowed it is refused, naming the table.
TEST(BaselineStarts, PlansATableOnlyRowBlocksHold) {
  const std::vector<Table> tables = {make_table("narrow", 50'000'003, 4), make_table("small", 1000, 16)};
  const Cluster cluster = cluster_of(4, 200'064'008);
  PlannerConfig config = testing::planner_config();
  for (bool starts : {true, false}) {
    config.neuroshard.baseline_starts = starts;
    const Plan plan = make_planner("neuroshard", config)->plan(tables, cluster);
    EXPECT_EQ(plan.algorithm, "neuroshard");
    EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
    expect_valid_and_fitting(plan, tables, cluster);
  }
  config.neuroshard.sharding_types = ShardingTypeSet::table_and_column();
  try {
    make_planner("neuroshard", config)->plan(tables, cluster);
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("\"narrow\""), std::string::npos) << e.what();
  }
}

// A table the tables file allows only table-row-wise blocks: the search cannot start it, TorchRec's
// all-types proposals can, and so the planner plans it from theirs; without the baselines it is refused.
TEST(BaselineStarts, PlansFromABaselineWhenTheSearchCannot) {
  std::vector<Table> tables = testing::varied_tables(10);
  tables[0].constraints.sharding_types.add(ShardingType::kTableRowWise);
  Cluster cluster = cluster_of(8, 16ll << 30);
  cluster.devices_per_host = 4;
  PlannerConfig config = testing::planner_config();
  const Plan plan = make_planner("neuroshard", config)->plan(tables, cluster);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kTableRowWise);
  ASSERT_TRUE(plan.search.has_value());
  EXPECT_EQ(plan.search->started_from, "torchrec_all_types");
  EXPECT_EQ(plan.search->search_max_ms, 0.0);  // the search found none
  EXPECT_EQ(nlohmann::json::parse(plan_to_string(plan))["search"]["search_max_total_ms"], "no plan");
  expect_valid_and_fitting(plan, tables, cluster);
  config.neuroshard.baseline_starts = false;
  try {
    make_planner("neuroshard", config)->plan(tables, cluster);
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find(tables[0].name), std::string::npos) << e.what();
  }
}

// Under its own model, on any task, its plan scores no worse than any baseline's it may use.
TEST(BaselineStarts, NeverWorseThanABaseline) {
  const PlannerConfig config = testing::planner_config();
  for (int count : {12, 60}) {
    const auto tables = testing::varied_tables(count);
    for (int devices : {2, 4, 8}) {
      const Cluster cluster = cluster_of(devices, 16ll << 30);
      const Plan ours = make_planner("neuroshard", config)->plan(tables, cluster);
      expect_valid_and_fitting(ours, tables, cluster);
      const double mine = cost(ours, tables, *config.cost_model);
      for (const auto& name : baseline_planner_names()) {
        const double theirs = cost(make_planner(name, config)->plan(tables, cluster), tables, *config.cost_model);
        EXPECT_LE(mine, theirs * (1 + 1e-12)) << name << ", " << count << " tables on " << devices << " GPUs";
      }
    }
  }
}

// The search's own plan, unchanged, wherever it scores best; the same plan for any thread count.
TEST(BaselineStarts, KeepsTheSearchsPlanWhereItIsBestAndIsDeterministic) {
  PlannerConfig config = testing::planner_config();
  const auto tables = testing::varied_tables(60);
  const Cluster cluster = cluster_of(8, 4ll << 30);
  config.neuroshard.baseline_starts = false;
  const Plan search = make_planner("neuroshard", config)->plan(tables, cluster);
  config.neuroshard.baseline_starts = true;
  std::string first;
  for (int threads : {1, 3}) {
    config.neuroshard.threads = threads;
    const Plan plan = make_planner("neuroshard", config)->plan(tables, cluster);
    if (first.empty()) first = plan_to_string(plan);
    EXPECT_EQ(plan_to_string(plan), first) << threads << " threads";
    if (plan.search && plan.search->started_from.empty()) {
      EXPECT_EQ(plan_to_string(plan), plan_to_string(search));
    }
  }
}

}  // namespace
}  // namespace shardplan
