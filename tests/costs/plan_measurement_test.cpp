// measure_plans: a task's plans measured together, identical devices measured once and shared.
#include <gtest/gtest.h>

#include "../unit/test_tables.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/costs/plan_measurement.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan {
namespace {

using testing::make_table;

const std::vector<Table> kTables = {make_table("a", 4000, 16, 4), make_table("b", 2000, 32, 2),
                                    make_table("c", 3000, 16, 1)};

// Places the named tables whole on the given ranks, listing them in the order given.
Plan plan_of(const std::vector<std::pair<std::size_t, int>>& table_ranks) {
  Plan plan;
  plan.cluster.num_devices = 3;
  for (const auto& [t, rank] : table_ranks) plan.tables.push_back(table_wise_sharding(kTables[t], rank));
  return plan;
}

// The compute benchmark at a small batch.
ComputeTimer small_timer() {
  ComputeBenchConfig bench = PlanMeasureConfig::default_bench();
  bench.batch_size = 256;
  bench.timed_iterations = 2;
  return compute_timer(bench);
}

PlanMeasureConfig small_config(int rounds) {
  PlanMeasureConfig config;
  config.rounds = rounds;
  config.quiet = true;
  return config;
}

TEST(MeasurePlans, DevicesWithTheSameShardsShareOneMeasurement) {
  // The same two sets on swapped ranks, their pieces listed in another order; rank 2 is empty.
  Plan first = plan_of({{0, 0}, {1, 1}, {2, 1}});
  Plan second = plan_of({{2, 0}, {1, 0}, {0, 1}});
  std::vector<PlanMeasurement> m = measure_plans({&first, &second}, kTables, small_config(2), small_timer());
  ASSERT_EQ(m.size(), 2u);
  for (const auto& plan : m) {
    ASSERT_EQ(plan.compute_ms.size(), 3u);
    EXPECT_FALSE(plan.interrupted);
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(plan.compute_ms[r].has_value()) << r;
      EXPECT_GT(*plan.compute_ms[r], 0.0);
      EXPECT_EQ(plan.skipped[r], "");
    }
    EXPECT_EQ(plan.compute_ms[2], 0.0);
  }
  EXPECT_EQ(*m[0].compute_ms[0], *m[1].compute_ms[1]);  // {a}
  EXPECT_EQ(*m[0].compute_ms[1], *m[1].compute_ms[0]);  // {b, c} and {c, b}
}

TEST(MeasurePlans, SetsOverTheCapAreSkippedWithTheReasonOnEveryDeviceHoldingThem) {
  Plan first = plan_of({{0, 0}, {1, 1}, {2, 1}});
  Plan second = plan_of({{0, 2}, {1, 0}, {2, 0}});
  PlanMeasureConfig config = small_config(1);
  config.memory_cap_bytes = 1;
  std::vector<PlanMeasurement> m = measure_plans({&first, &second}, kTables, config, small_timer());
  for (const auto& plan : m) {
    int skipped = 0;
    for (std::size_t r = 0; r < plan.compute_ms.size(); ++r) {
      if (plan.compute_ms[r] == 0.0) continue;  // the empty device
      EXPECT_FALSE(plan.compute_ms[r].has_value());
      EXPECT_NE(plan.skipped[r].find("over the measurement cap"), std::string::npos) << plan.skipped[r];
      ++skipped;
    }
    EXPECT_EQ(skipped, 2);
  }
}

TEST(MeasurePlans, OneRoundAtLeast) {
  Plan plan = plan_of({{0, 0}});
  EXPECT_THROW(measure_plan(plan, kTables, small_config(0), small_timer()), InputError);
}

}  // namespace
}  // namespace shardplan
