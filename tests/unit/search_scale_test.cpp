// The search's work bounds at scale: the device index agrees with a walk in order, the large path's
// step budget and refinement, determinism across threads on a large case, and --time-limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <tuple>

#include "device_index.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::varied_tables;

// The walk the index replaces: devices by (compute, bytes, rank), the first that qualifies.
int first_by_walk(const std::set<std::tuple<double, int64_t, int>>& order, const std::vector<int64_t>& width,
                  int64_t max_bytes, int64_t max_width, const std::vector<int>& excluded) {
  for (const auto& [compute, bytes, r] : order) {
    if (bytes > max_bytes || width[static_cast<std::size_t>(r)] > max_width) continue;
    if (std::find(excluded.begin(), excluded.end(), r) != excluded.end()) continue;
    return r;
  }
  return -1;
}

TEST(DeviceIndex, FindsWhatAWalkInOrderFinds) {
  std::mt19937_64 rng(7);
  DeviceIndex index;  // reused, as a placement's grid points reuse theirs: a reset forgets every tree
  for (int devices : {1, 2, 3, 5, 8, 37, 130, 64}) {
    // The width limits the queries below use, as a placement gives them (beyond 32 devices each has a
    // tree, built on its first query).
    index.reset(devices, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    std::set<std::tuple<double, int64_t, int>> order;
    std::vector<double> compute(static_cast<std::size_t>(devices), 0.0);
    std::vector<int64_t> bytes(static_cast<std::size_t>(devices), 0);
    std::vector<int64_t> width(static_cast<std::size_t>(devices), 0);
    for (int r = 0; r < devices; ++r) order.emplace(0.0, 0, r);
    for (int round = 0; round < 400; ++round) {
      // Ties in compute are common (empty devices, equal pieces): draw from few values.
      const int r = static_cast<int>(rng() % static_cast<uint64_t>(devices));
      const auto ru = static_cast<std::size_t>(r);
      order.erase({compute[ru], bytes[ru], r});
      compute[ru] = static_cast<double>(rng() % 6);
      bytes[ru] = static_cast<int64_t>(rng() % 5);
      width[ru] = static_cast<int64_t>(rng() % 9);
      order.emplace(compute[ru], bytes[ru], r);
      index.update(r, compute[ru], bytes[ru], width[ru]);

      const auto max_bytes = static_cast<int64_t>(rng() % 6) - 1;
      const int64_t max_width = rng() % 4 == 0 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(rng() % 10);
      std::vector<int> excluded;
      for (int k = 0; k < static_cast<int>(rng() % 3); ++k)
        excluded.push_back(static_cast<int>(rng() % static_cast<uint64_t>(devices)));
      EXPECT_EQ(index.first(max_bytes, max_width, &excluded),
                first_by_walk(order, width, max_bytes, max_width, excluded))
          << devices << " devices, round " << round;
      EXPECT_EQ(index.first(max_bytes, max_width, nullptr), first_by_walk(order, width, max_bytes, max_width, {}));
      const DeviceIndex& unlimited = index;  // the query without a width limit, safe to share across threads
      EXPECT_EQ(unlimited.first(max_bytes, &excluded),
                first_by_walk(order, width, max_bytes, std::numeric_limits<int64_t>::max(), excluded));
    }
  }
}

TEST(SearchScale, LargePathStartsAboveAMillionPiecesTimesDevices) {
  EXPECT_FALSE(is_large_search(856, 128));
  EXPECT_FALSE(is_large_search(1024, 1024));
  EXPECT_TRUE(is_large_search(1025, 1024));
  EXPECT_TRUE(is_large_search(5000, 1024));
  EXPECT_TRUE(is_large_search(20000, 4096));
}

TEST(SearchScale, StepBudgetIsBoundedByTheSmallerOfTablesAndDevices) {
  // The documented bound: max(10, min(tables, GPUs)) steps, each placing a fixed number of children.
  EXPECT_EQ(auto_split_steps(5000, 1024), 1024);
  EXPECT_EQ(auto_split_steps(20000, 4096), 4096);
  EXPECT_EQ(auto_split_steps(300, 4096), 300);
  EXPECT_EQ(auto_split_steps(5, 2), 10);
}

// 1,200 tables on 1,024 devices: the large path, small enough for a unit test.
struct LargeCase {
  std::vector<Table> tables = varied_tables(1200);
  Cluster cluster = cluster_of(1024, 8ll << 30);
};

Plan plan_large(const LargeCase& c, NeuroShardConfig config) {
  return make_neuroshard_planner(testing::analytic_model(), config)->plan(c.tables, c.cluster);
}

TEST(SearchScale, LargePlansAreValidAndSayHowTheSearchEnded) {
  LargeCase c;
  ASSERT_TRUE(is_large_search(1200, 1024));
  NeuroShardConfig config;
  config.steps = 12;
  config.refine_rounds = 8;
  Plan plan = plan_large(c, config);
  auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), c.tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
  ASSERT_TRUE(plan.search.has_value());
  EXPECT_LE(plan.search->steps, 12);
  EXPECT_EQ(plan.search->step_budget, 12);
  EXPECT_LE(plan.search->refine_rounds, 8);
  EXPECT_FALSE(plan.search->cut_short);
  EXPECT_EQ(nlohmann::json::parse(plan_to_string(plan))["search"]["cut_short"], false);
}

TEST(SearchScale, LargeSearchIsTheSameForAnyThreadCount) {
  LargeCase c;
  NeuroShardConfig config;
  config.steps = 6;
  config.refine_rounds = 4;
  config.threads = 1;
  const std::string one = plan_to_string(plan_large(c, config));
  for (int threads : {2, 5}) {
    config.threads = threads;
    EXPECT_EQ(plan_to_string(plan_large(c, config)), one) << threads << " threads";
  }
}

TEST(SearchScale, TimeLimitReturnsAValidPlanMarkedCutShort) {
  LargeCase c;
  NeuroShardConfig config;
  config.patience = 0;       // every step would run
  config.steps = 1'000'000;  // far more than a millisecond allows
  config.time_limit_seconds = 0.001;
  Plan plan = plan_large(c, config);
  auto doc = nlohmann::json::parse(plan_to_string(plan));
  auto result = validate_plan_json(doc, c.tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
  ASSERT_TRUE(plan.search.has_value());
  EXPECT_TRUE(plan.search->cut_short);
  EXPECT_EQ(plan.search->stopped, "time limit");
  EXPECT_LT(plan.search->steps, plan.search->step_budget);
  EXPECT_EQ(doc["search"]["cut_short"], true);
  EXPECT_DOUBLE_EQ(doc["search"]["time_limit_seconds"].get<double>(), 0.001);
}

TEST(SearchScale, GainsBelowMinGainAreKeptButDoNotExtendTheSearch) {
  // Fewer tables than GPUs: every step's halving spreads a table further, a gain each time.
  auto tables = varied_tables(6);
  const Cluster cluster = cluster_of(16, 8ll << 30);
  NeuroShardConfig config;
  config.patience = 3;
  config.min_gain = 0.9;  // no step gains 90%: only the first `patience` steps run
  Plan patient = make_neuroshard_planner(testing::analytic_model(), config)->plan(tables, cluster);
  ASSERT_TRUE(patient.search.has_value());
  EXPECT_EQ(patient.search->steps, 3);
  EXPECT_EQ(patient.search->stopped, "patience");
  // Its plan is the best of those steps, small gains included: the plan of a 3-step budget.
  config.min_gain = 0.0;
  config.steps = 3;
  Plan three = make_neuroshard_planner(testing::analytic_model(), config)->plan(tables, cluster);
  const auto a = nlohmann::json::parse(plan_to_string(patient));
  const auto b = nlohmann::json::parse(plan_to_string(three));
  EXPECT_EQ(a["tables"], b["tables"]);
  EXPECT_EQ(a["devices"], b["devices"]);
  EXPECT_GT(three.search->splits, 0);  // the steps did split: there were gains to keep
  // Any gain extends the search: it runs past those 3 steps.
  config.steps = 0;
  Plan eager = make_neuroshard_planner(testing::analytic_model(), config)->plan(tables, cluster);
  EXPECT_GT(eager.search->steps, 3);
  config.min_gain = 1.0;
  EXPECT_THROW(make_neuroshard_planner(testing::analytic_model(), config), InputError);
}

TEST(SearchScale, SmallSearchesWithoutALimitAreNotCutShort) {
  auto tables = varied_tables(30);
  NeuroShardConfig config;
  config.time_limit_seconds = 3600;
  Plan plan = make_neuroshard_planner(testing::analytic_model(), config)->plan(tables, cluster_of(4, 8ll << 30));
  ASSERT_TRUE(plan.search.has_value());
  EXPECT_FALSE(plan.search->cut_short);
  EXPECT_NE(plan.search->stopped, "time limit");
}

}  // namespace
}  // namespace shardplan
