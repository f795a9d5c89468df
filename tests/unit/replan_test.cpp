#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_moves.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/search/replan.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::analytic_model;
using testing::cluster_of;
using testing::make_table;
using testing::varied_tables;

constexpr int64_t kGiB = int64_t{1} << 30;

Plan fresh_plan(const std::vector<Table>& tables, const Cluster& cluster) {
  return make_planner("neuroshard", testing::planner_config())->plan(tables, cluster);
}

// The old tables with every third table's pooling factor multiplied by `factor`.
std::vector<Table> drifted(std::vector<Table> tables, double factor) {
  for (std::size_t i = 0; i < tables.size(); i += 3) tables[i].pooling_factor *= factor;
  return tables;
}

double max_cost(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  return max_total_ms(score_plan(plan, tables, model));
}

ReplanConfig budget_of(int64_t bytes) {
  ReplanConfig config;
  config.move_budget_bytes = bytes;
  config.from = "old.json";
  config.threads = 1;
  return config;
}

void expect_valid(const Plan& plan, const std::vector<Table>& tables) {
  const ValidationResult result = validate_plan_json(plan_to_json(plan), tables, "replan");
  EXPECT_TRUE(result.valid()) << (result.problems.empty() ? "" : result.problems.front());
}

TEST(Replan, ABudgetOfNothingRescoresTheOldPlacement) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  const auto tables = varied_tables(24);
  const Plan old_plan = fresh_plan(tables, cluster);
  const auto now = drifted(tables, 8.0);
  const auto model = analytic_model();
  const Plan plan = replan(old_plan, now, cluster, *model, budget_of(0));
  ASSERT_TRUE(plan.replan);
  EXPECT_EQ(plan.replan->changes.moved_bytes, 0);
  EXPECT_EQ(plan.replan->changes.kept_tables, 24);
  EXPECT_EQ(plan_layout_key(plan), plan_layout_key(old_plan));
  EXPECT_NEAR(plan.replan->old_max_total_ms, max_cost(old_plan, now, *model), 1e-6 * plan.replan->old_max_total_ms);
  expect_valid(plan, now);
}

TEST(Replan, MovesStayWithinTheBudgetAndLowerTheCost) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  const auto tables = varied_tables(24);
  const Plan old_plan = fresh_plan(tables, cluster);
  const auto now = drifted(tables, 8.0);
  const auto model = analytic_model();
  const double old_cost = max_cost(old_plan, now, *model);
  const int64_t tenth = move_budget_from_percent(10.0, now, cluster.optimizer);
  const Plan some = replan(old_plan, now, cluster, *model, budget_of(tenth));
  const Plan any =
      replan(old_plan, now, cluster, *model, budget_of(move_budget_from_percent(100.0, now, cluster.optimizer)));
  EXPECT_LE(some.replan->changes.moved_bytes, tenth);
  EXPECT_GT(some.replan->changes.moved_bytes, 0);
  EXPECT_LT(max_cost(some, now, *model), old_cost);
  EXPECT_LE(max_cost(any, now, *model), max_cost(some, now, *model) * (1 + 1e-9));
  // What the plan records is what the two plans differ by.
  EXPECT_EQ(plan_moves(old_plan, some, cluster.optimizer).moved_bytes, some.replan->changes.moved_bytes);
  expect_valid(some, now);
  expect_valid(any, now);
}

TEST(Replan, PlacesNewTablesDropsMissingOnesAndRebuildsChangedOnes) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  const auto tables = varied_tables(12);
  const Plan old_plan = fresh_plan(tables, cluster);
  std::vector<Table> now(tables.begin() + 1, tables.end());  // t0 retired
  now[0].rows *= 2;                                          // t1 grew
  now.push_back(make_table("new", 50'000, 64, 10.0));
  const auto model = analytic_model();
  const Plan plan = replan(old_plan, now, cluster, *model, budget_of(0));
  const PlanMoves& changes = plan.replan->changes;
  ASSERT_EQ(changes.dropped, std::vector<std::string>{"t0"});
  ASSERT_EQ(changes.tables.size(), 2u);
  EXPECT_EQ(changes.tables[0].table, "t1");
  EXPECT_EQ(changes.tables[0].change, TableChange::kRebuilt);
  EXPECT_EQ(changes.tables[0].bytes, table_memory_bytes(now[0], cluster.optimizer));
  EXPECT_EQ(changes.tables[1].table, "new");
  EXPECT_EQ(changes.tables[1].change, TableChange::kAdded);
  EXPECT_EQ(changes.moved_bytes, 0);  // neither costs budget
  EXPECT_EQ(changes.kept_tables, 10);
  expect_valid(plan, now);
}

// 3 tables of 1 GiB on rank 0 of 3 GPUs of 3 GiB; the GPUs shrink to 1.5 GiB: two tables must move, which a
// budget of nothing refuses, naming the budget that would do.
TEST(Replan, RefusesWhatNoLongerFitsWithinTheBudget) {
  std::vector<Table> tables;
  for (int i = 0; i < 3; ++i) tables.push_back(make_table("t" + std::to_string(i), kGiB / 4 / 64, 64));
  const Cluster wide = cluster_of(3, 3 * kGiB);
  Plan old_plan;
  old_plan.cluster = wide;
  for (const Table& t : tables) old_plan.tables.push_back(table_wise_sharding(t, 0));
  const Cluster narrow = cluster_of(3, kGiB + kGiB / 2);
  const auto model = analytic_model();
  try {
    replan(old_plan, tables, narrow, *model, budget_of(0));
    FAIL() << "expected InfeasibleError";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 holds"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("would do"), std::string::npos) << e.what();
  }
  const Plan plan = replan(old_plan, tables, narrow, *model, budget_of(2 * kGiB));
  EXPECT_GT(plan.replan->changes.moved_bytes, 0);
  expect_valid(plan, tables);
}

TEST(Replan, RefusesHostMemoryThatNoLongerHoldsTheCachedTables) {
  const std::vector<Table> tables{make_table("cached", kGiB / 4 / 64, 64), make_table("t", 1000, 64)};
  Cluster cluster = cluster_of(2, kGiB);
  cluster.ddr_per_host_bytes = kGiB;
  cluster.host_link_gb_per_s = 32.0;
  Plan old_plan;
  old_plan.cluster = cluster;
  old_plan.tables = {table_wise_sharding(tables[0], 0), table_wise_sharding(tables[1], 1)};
  old_plan.tables[0].cache = CacheParams{0.2};
  const auto model = analytic_model();
  const Plan kept = replan(old_plan, tables, cluster, *model, budget_of(kGiB));
  EXPECT_TRUE(kept.tables[0].cache.has_value());
  expect_valid(kept, tables);
  cluster.ddr_per_host_bytes = kGiB / 8;
  try {
    replan(old_plan, tables, cluster, *model, budget_of(kGiB));
    FAIL() << "expected InfeasibleError";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "host 0: the old plan's cached tables need 1.00 GiB of host memory there, over its 128.00 MiB"),
              std::string::npos)
        << e.what();
  }
}

TEST(Replan, MovesATablePinnedElsewhereAndCountsIt) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  std::vector<Table> tables = varied_tables(8);
  const Plan old_plan = fresh_plan(tables, cluster);
  std::size_t k = 0;
  while (k < tables.size() && old_plan.tables[k].shards.size() != 1) ++k;
  ASSERT_LT(k, tables.size());
  const int elsewhere = (old_plan.tables[k].shards[0].rank + 1) % 4;
  tables[k].constraints.ranks = {elsewhere};
  const Plan plan = replan(old_plan, tables, cluster, *analytic_model(), budget_of(16 * kGiB));
  EXPECT_EQ(plan.tables[k].shards[0].rank, elsewhere);
  const auto& changed = plan.replan->changes.tables;
  const auto pinned =
      std::find_if(changed.begin(), changed.end(), [&](const TableMove& m) { return m.table == tables[k].name; });
  ASSERT_NE(pinned, changed.end());
  EXPECT_EQ(pinned->change, TableChange::kMoved);
  EXPECT_EQ(pinned->bytes, table_memory_bytes(tables[k], cluster.optimizer));
  // With no budget the pin's move is refused, naming why.
  try {
    replan(old_plan, tables, cluster, *analytic_model(), budget_of(0));
    FAIL() << "expected InfeasibleError";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("is pinned off rank"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("would do"), std::string::npos) << e.what();
  }
}

TEST(Replan, KeepsATablesTypeOrRefusesIt) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  const auto tables = varied_tables(8);
  Plan old_plan = fresh_plan(tables, cluster);
  old_plan.tables[1] = row_wise_sharding(tables[1], 4);
  ReplanConfig config = budget_of(0);
  config.sharding_types = ShardingTypeSet::table_and_column();
  EXPECT_THROW(replan(old_plan, tables, cluster, *analytic_model(), config), InputError);
  const Plan plan = replan(old_plan, tables, cluster, *analytic_model(), budget_of(0));
  EXPECT_EQ(plan.tables[1].type, ShardingType::kRowWise);
}

// A new table no GPU holds whole, pinned to 3 ranks: 3 column pieces, one on each (room made for them).
TEST(Replan, SplitsANewTableOverItsPinnedRanks) {
  const Cluster cluster = cluster_of(4, 4 * kGiB);
  const auto tables = varied_tables(4);
  const Plan old_plan = fresh_plan(tables, cluster);
  std::vector<Table> now = tables;
  Table wide = make_table("wide", 10 * kGiB / 384, 96, 5.0);  // 10 GiB: 3 pieces of 3.3 GiB, not 2 of 5
  wide.constraints.ranks = {0, 1, 2};
  wide.constraints.sharding_types.add(ShardingType::kColumnWise);
  now.push_back(wide);
  const int64_t all = move_budget_from_percent(100.0, now, cluster.optimizer);
  const Plan plan = replan(old_plan, now, cluster, *analytic_model(), budget_of(all));
  const TableSharding& placed = plan.tables.back();
  ASSERT_EQ(placed.shards.size(), 3u);
  for (const Shard& shard : placed.shards) EXPECT_NE(shard.rank, 3);
  expect_valid(plan, now);
}

// One hot table beside two small ones on 2 GPUs, all table-wise: halving the hot one lowers the maximum,
// and TorchRec then runs a column-wise group of all-to-alls beside the table-wise one. A replan splits it
// only when the gain pays for that group.
TEST(Replan, SplitsOnlyWhenTheGainPaysForTheColumnWiseGroup) {
  const std::vector<Table> tables = {make_table("hot", 10'000, 108, 60.0), make_table("a", 1'000, 16, 5.0),
                                     make_table("b", 1'000, 16, 5.0)};
  const Cluster cluster = cluster_of(2, kGiB);
  Plan old_plan;
  old_plan.cluster = cluster;
  old_plan.tables = {table_wise_sharding(tables[0], 0), table_wise_sharding(tables[1], 1),
                     table_wise_sharding(tables[2], 1)};
  ReplanConfig all = budget_of(move_budget_from_percent(100.0, tables, cluster.optimizer));
  all.sharding_types = ShardingTypeSet::table_and_column();
  const auto model = analytic_model();
  const Plan split_plan = replan(old_plan, tables, cluster, *model, all);
  ASSERT_EQ(split_plan.tables[0].type, ShardingType::kColumnWise);
  const double gain = max_cost(old_plan, tables, *model) - max_cost(split_plan, tables, *model);
  ASSERT_GT(gain, 0.0);
  for (double group_ms : {0.25 * gain, 2.0 * gain}) {
    const testing::GroupChargedModel charged(model, group_ms);
    const Plan plan = replan(old_plan, tables, cluster, charged, all);
    const bool pays = group_ms < gain;
    EXPECT_EQ(plan.tables[0].type, pays ? ShardingType::kColumnWise : ShardingType::kTableWise) << group_ms;
    EXPECT_LE(max_cost(plan, tables, charged), max_cost(old_plan, tables, charged) * (1 + 1e-9)) << group_ms;
  }
}

TEST(Replan, RefusesAnotherDeviceCount) {
  const auto tables = varied_tables(8);
  const Plan old_plan = fresh_plan(tables, cluster_of(4, 4 * kGiB));
  EXPECT_THROW(replan(old_plan, tables, cluster_of(8, 4 * kGiB), *analytic_model(), budget_of(0)), InputError);
}

TEST(Replan, SameForAnyThreadCount) {
  const Cluster cluster = cluster_of(8, 4 * kGiB);
  const auto tables = varied_tables(60);
  const Plan old_plan = fresh_plan(tables, cluster);
  const auto now = drifted(tables, 5.0);
  const auto model = analytic_model();
  ReplanConfig one = budget_of(move_budget_from_percent(20.0, now, cluster.optimizer));
  ReplanConfig two = one;
  two.threads = 2;
  EXPECT_EQ(plan_to_string(replan(old_plan, now, cluster, *model, one)),
            plan_to_string(replan(old_plan, now, cluster, *model, two)));
}

TEST(PlanMoves, CountsTheShardsNotWhereTheyWere) {
  const Table a = make_table("a", 1000, 16);
  const Table b = make_table("b", 1000, 8);
  Plan old_plan;
  old_plan.cluster = cluster_of(2, kGiB);
  old_plan.tables = {table_wise_sharding(a, 0), table_wise_sharding(b, 0)};
  Plan new_plan = old_plan;
  new_plan.tables[1].shards[0].rank = 1;
  const PlanMoves moves = plan_moves(old_plan, new_plan, Optimizer::kSgd);
  EXPECT_EQ(moves.moved_bytes, 1000 * 8 * 4);
  EXPECT_EQ(moves.kept_tables, 1);
  ASSERT_EQ(moves.tables.size(), 1u);
  EXPECT_EQ(moves.tables[0].from, std::vector<int>{0});
  EXPECT_EQ(moves.tables[0].to, std::vector<int>{1});
  // Optimizer state moves with the weights: Adam keeps two fp32 per element.
  EXPECT_EQ(plan_moves(old_plan, new_plan, Optimizer::kAdam).moved_bytes, 3 * 1000 * 8 * 4);
}

}  // namespace
}  // namespace shardplan
