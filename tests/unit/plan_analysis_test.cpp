#include <gtest/gtest.h>

#include <memory>

#include "shardplan/planners/baseline_comparison.hpp"
#include "shardplan/report/bounding_drivers.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::make_table;

// Rank 0 holds a wide, busy table and a narrow, idle one; rank 1 a narrow one.
struct TwoDevices {
  std::vector<Table> tables = {make_table("narrow", 1000, 4, 1.0), make_table("wide", 1'000'000, 128, 40.0),
                               make_table("other", 1000, 4, 1.0)};
  Plan plan;
  TwoDevices() {
    plan.cluster.num_devices = 2;
    plan.tables = {table_wise_sharding(tables[0], 0), table_wise_sharding(tables[1], 0),
                   table_wise_sharding(tables[2], 1)};
  }
};

TEST(BoundingDrivers, RanksTheSlowestDevicesTablesByWhatLeavingThemOutSaves) {
  TwoDevices two;
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  auto bound = bounding_drivers(two.plan, two.tables, *model);
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->rank, 0);
  ASSERT_EQ(bound->drivers.size(), 2u);
  EXPECT_EQ(bound->drivers[0].table, "wide");
  EXPECT_EQ(bound->drivers[0].cols, 128);
  EXPECT_DOUBLE_EQ(bound->drivers[0].pooling_factor, 40.0);
  EXPECT_EQ(bound->drivers[1].table, "narrow");
  EXPECT_GT(bound->drivers[0].saving_ms, bound->drivers[1].saving_ms);
  // The analytic model adds shards up and a device's comm depends on its own width only, so leaving each
  // table out in turn saves, all told, the device's whole total (to the float precision of its summaries).
  double total = score_plan(two.plan, two.tables, *model)[0].total_ms();
  EXPECT_NEAR(bound->drivers[0].saving_ms + bound->drivers[1].saving_ms, total, 1e-6 * total);
}

TEST(BoundingDrivers, KeepsTheLargestFewAndCountsAllOfATablesColumnsOnTheDevice) {
  auto tables = testing::varied_tables(12);
  Plan plan;
  plan.cluster.num_devices = 3;
  for (const auto& t : tables) plan.tables.push_back(table_wise_sharding(t, 1));
  // Two column-wise pieces of the first table on the same device count as one driver with all its columns.
  int half = tables[0].dim / 2;
  plan.tables[0] = sharding_of(
      tables[0], {Shard{1, 0, 0, tables[0].rows, half}, Shard{1, 0, half, tables[0].rows, tables[0].dim - half}});
  auto bound = bounding_drivers(plan, tables, *make_analytic_cost_model(AnalyticCostConfig{}), 20);
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->rank, 1);
  ASSERT_EQ(bound->drivers.size(), 12u);
  for (const auto& d : bound->drivers) {
    if (d.table == tables[0].name) {
      EXPECT_EQ(d.cols, tables[0].dim);
    }
  }
  auto top3 = bounding_drivers(plan, tables, *make_analytic_cost_model(AnalyticCostConfig{}));
  ASSERT_EQ(top3->drivers.size(), 3u);
  EXPECT_EQ(top3->drivers[0].table, bound->drivers[0].table);
}

TEST(BoundingDrivers, UsesThePlansOwnScoresOnlyWhenTheSameModelMadeThem) {
  auto tables = testing::varied_tables(9);
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  Plan plan;
  plan.cluster.num_devices = 3;
  for (std::size_t t = 0; t < tables.size(); ++t)
    plan.tables.push_back(table_wise_sharding(tables[t], static_cast<int>(t % 3)));
  auto unscored = bounding_drivers(plan, tables, *model, 9);
  plan.device_costs = score_plan(plan, tables, *model);
  plan.cost_model = model->name();
  auto scored = bounding_drivers(plan, tables, *model, 9);
  ASSERT_TRUE(unscored && scored);
  EXPECT_EQ(scored->rank, unscored->rank);
  ASSERT_EQ(scored->drivers.size(), unscored->drivers.size());
  for (std::size_t k = 0; k < scored->drivers.size(); ++k) {
    EXPECT_EQ(scored->drivers[k].table, unscored->drivers[k].table);
    EXPECT_DOUBLE_EQ(scored->drivers[k].saving_ms, unscored->drivers[k].saving_ms);
  }
  // Scores from another model are not trusted: the device ranked slowest by them is ignored.
  for (auto& c : *plan.device_costs) c.compute_ms = 0.0;
  (*plan.device_costs)[static_cast<std::size_t>((unscored->rank + 1) % 3)].compute_ms = 1e6;
  plan.cost_model = "another model";
  EXPECT_EQ(bounding_drivers(plan, tables, *model, 9)->rank, unscored->rank);
}

TEST(BaselineComparison, LeavesOutNeuroShardAndRandom) {
  auto names = baseline_planner_names();
  EXPECT_FALSE(names.empty());
  for (const auto& n : names) {
    EXPECT_NE(n, "neuroshard");
    EXPECT_NE(n, "random");
  }
}

// Outcomes a plan's baseline starts found are reused, in the planners' order; only the rest are planned.
TEST(BaselineComparison, ReusesKnownOutcomesAndPlansTheRest) {
  auto tables = testing::varied_tables(40);
  Cluster cluster;
  cluster.num_devices = 4;
  auto config = testing::planner_config();
  const std::vector<BaselineOutcome> known = {{"no_such_planner", 1.5, "", false}};
  auto outcomes =
      compare_with_baselines({"no_such_planner", "size_greedy"}, tables, cluster, config, *config.cost_model, known);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].planner, "no_such_planner");
  EXPECT_EQ(outcomes[0].max_total_ms, 1.5);  // not planned: that planner does not exist
  EXPECT_EQ(outcomes[1].planner, "size_greedy");
  EXPECT_TRUE(outcomes[1].max_total_ms);

  // A plan's baseline starts record what the report would plan again, the same outcomes.
  const Plan plan = make_planner("neuroshard", config)->plan(tables, cluster);
  ASSERT_TRUE(plan.search.has_value());
  const auto& recorded = plan.search->baselines;
  const auto fresh = compare_with_baselines({"torchrec", "size_greedy"}, tables, cluster, config, *config.cost_model);
  for (const auto& outcome : fresh) {
    auto it =
        std::find_if(recorded.begin(), recorded.end(), [&](const auto& o) { return o.planner == outcome.planner; });
    ASSERT_NE(it, recorded.end()) << outcome.planner;
    EXPECT_EQ(it->max_total_ms, outcome.max_total_ms) << outcome.planner;
  }
}

TEST(BaselineComparison, ScoresEachBaselineAndReportsFailuresWithoutThrowing) {
  auto tables = testing::varied_tables(40);
  Cluster cluster;
  cluster.num_devices = 4;
  auto config = testing::planner_config();
  auto outcomes =
      compare_with_baselines({"size_greedy", "no_such_planner"}, tables, cluster, config, *config.cost_model);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].planner, "size_greedy");
  ASSERT_TRUE(outcomes[0].max_total_ms);
  Plan greedy = make_planner("size_greedy", config)->plan(tables, cluster);
  double max = 0.0;
  for (const auto& c : score_plan(greedy, tables, *config.cost_model)) max = std::max(max, c.total_ms());
  EXPECT_DOUBLE_EQ(*outcomes[0].max_total_ms, max);
  EXPECT_FALSE(outcomes[1].max_total_ms);
  EXPECT_NE(outcomes[1].failure.find("unknown planner"), std::string::npos);

  // A table larger than any device: table-wise baselines cannot place it.
  cluster.memory_per_device_bytes = 1 << 20;
  std::vector<Table> too_big = {make_table("huge", 1'000'000, 64)};
  auto infeasible = compare_with_baselines(baseline_planner_names(), too_big, cluster, config, *config.cost_model);
  for (const auto& o : infeasible) {
    EXPECT_FALSE(o.max_total_ms) << o.planner;
    EXPECT_FALSE(o.failure.empty()) << o.planner;
  }
}

// Under a time limit the comparison drops what the limit leaves no time for, and says so.
TEST(BaselineComparison, PastTheDeadlineBaselinesAreNotRunAndTorchRecGivesUp) {
  auto tables = testing::varied_tables(40);
  Cluster cluster;
  cluster.num_devices = 4;
  auto config = testing::planner_config();
  auto polls = std::make_shared<int>(0);
  const Deadline::Clock::time_point zero{};
  // Passes at the third look at the clock: after the comparison's own check, inside TorchRec's proposals.
  config.deadline =
      Deadline(zero + std::chrono::seconds(3), [polls, zero] { return zero + std::chrono::seconds(++*polls); });
  auto outcomes =
      compare_with_baselines({"torchrec_all_types", "size_greedy"}, tables, cluster, config, *config.cost_model);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_FALSE(outcomes[0].max_total_ms);
  EXPECT_EQ(outcomes[0].failure, "torchrec_all_types: the time limit passed before it finished");
  EXPECT_TRUE(outcomes[0].out_of_time);
  EXPECT_FALSE(outcomes[1].max_total_ms);
  EXPECT_EQ(outcomes[1].failure, "the time limit passed before it ran");
  EXPECT_TRUE(outcomes[1].out_of_time);

  config.deadline = Deadline();  // none: the same comparison completes
  outcomes = compare_with_baselines({"torchrec_all_types", "size_greedy"}, tables, cluster, config, *config.cost_model);
  EXPECT_TRUE(outcomes[0].max_total_ms);
  EXPECT_TRUE(outcomes[1].max_total_ms);
}

}  // namespace
}  // namespace shardplan
