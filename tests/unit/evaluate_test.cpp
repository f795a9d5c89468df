// Reading plans back (plan_reader), scoring them (evaluate) and the bench's measured summary.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "shardplan/bench/bench.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/report/evaluate.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::make_table;

Cluster cluster_of(int devices) {
  Cluster cluster;
  cluster.num_devices = devices;
  cluster.memory_per_device_bytes = 1ll << 30;
  return cluster;
}

Plan two_table_plan() {
  std::vector<Table> tables = {make_table("a", 1000, 16, 2.0), make_table("b", 5000, 32, 8.0)};
  Plan plan;
  plan.algorithm = "handmade";
  plan.cluster = cluster_of(2);
  plan.tables.push_back(table_wise_sharding(tables[0], 1));
  plan.tables.push_back(sharding_of(tables[1], {Shard{0, 0, 0, 5000, 20}, Shard{1, 0, 20, 5000, 12}}));
  return plan;
}

std::vector<Table> two_tables() { return {make_table("a", 1000, 16, 2.0), make_table("b", 5000, 32, 8.0)}; }

TEST(PlanReader, WrittenPlanReadsBackTheSame) {
  Plan written = two_table_plan();
  Plan read = plan_from_json(nlohmann::json::parse(plan_to_string(written)), two_tables(), "plan.json");
  EXPECT_EQ(read.algorithm, "handmade");
  EXPECT_EQ(read.cluster.num_devices, 2);
  ASSERT_EQ(read.tables.size(), 2u);
  EXPECT_EQ(read.tables[0].type, ShardingType::kTableWise);
  EXPECT_EQ(read.tables[1].type, ShardingType::kColumnWise);
  ASSERT_EQ(read.tables[1].shards.size(), 2u);
  EXPECT_EQ(read.tables[1].shards[1].rank, 1);
  EXPECT_EQ(read.tables[1].shards[1].col_offset, 20);
  EXPECT_EQ(read.tables[1].shards[1].cols, 12);
  EXPECT_EQ(plan_to_string(read), plan_to_string(written));
}

TEST(PlanReader, TablesComeInTheTablesFileOrder) {
  nlohmann::json doc = nlohmann::json::parse(plan_to_string(two_table_plan()));
  std::swap(doc["tables"][0], doc["tables"][1]);
  Plan read = plan_from_json(doc, two_tables(), "plan.json");
  EXPECT_EQ(read.tables[0].name, "a");
  EXPECT_EQ(read.tables[1].name, "b");
}

TEST(PlanReader, InvalidPlanNamesItsProblems) {
  nlohmann::json doc = nlohmann::json::parse(plan_to_string(two_table_plan()));
  doc["tables"][1]["shards"][1]["shard_sizes"][1] = 8;  // leaves a gap
  try {
    plan_from_json(doc, two_tables(), "plan.json");
    FAIL() << "an invalid plan was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: the plan is invalid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gaps"), std::string::npos) << e.what();
  }
}

TEST(PlanReader, RowWiseShardsCarryTheirShareOfLookups) {
  std::vector<Table> tables = {make_table("r", 1000, 8, 10.0)};
  nlohmann::json doc = {{"format", "shard-plan/1"}, {"num_devices", 2}, {"memory_per_device_bytes", 1 << 30}};
  doc["tables"] = {
      {{"name", "r"},
       {"rows", 1000},
       {"dim", 8},
       {"dtype", "fp32"},
       {"sharding_type", "row_wise"},
       {"ranks", {0, 1}},
       {"shards",
        {{{"rank", 0}, {"shard_offsets", {0, 0}}, {"shard_sizes", {250, 8}}, {"placement", "rank:0/cuda:0"}},
         {{"rank", 1}, {"shard_offsets", {250, 0}}, {"shard_sizes", {750, 8}}, {"placement", "rank:1/cuda:1"}}}}}};
  doc["devices"] = {{{"rank", 0}, {"memory_bytes", 250 * 8 * 4}}, {{"rank", 1}, {"memory_bytes", 750 * 8 * 4}}};
  Plan plan = plan_from_json(doc, tables, "rows.json");
  ASSERT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  Table piece = shard_as_table(tables[0], plan.tables[0].shards[1]);
  EXPECT_EQ(piece.rows, 750);
  EXPECT_DOUBLE_EQ(piece.pooling_factor, 7.5);
  EXPECT_EQ(device_usage(plan)[1].num_row_wise, 1);
}

TEST(Evaluate, SummaryMatchesTheDevices) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  PlanEvaluation e = evaluate_plan(two_table_plan(), two_tables(), *model);
  ASSERT_EQ(e.devices.size(), 2u);
  double max_total = std::max(e.devices[0].predicted.total_ms(), e.devices[1].predicted.total_ms());
  EXPECT_DOUBLE_EQ(e.predicted.max_ms, max_total);
  EXPECT_EQ(e.devices[e.predicted.slowest].predicted.total_ms(), max_total);
  EXPECT_DOUBLE_EQ(e.predicted.mean_ms, (e.devices[0].predicted.total_ms() + e.devices[1].predicted.total_ms()) / 2);
  EXPECT_FALSE(e.measured.has_value());
  EXPECT_FALSE(evaluation_to_json(e).contains("measured"));
}

TEST(Evaluate, MeasurementsGiveErrorAndSkippedDevices) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  PlanEvaluation e = evaluate_plan(two_table_plan(), two_tables(), *model);
  double predicted0 = e.devices[0].predicted.compute_ms;
  attach_measurements(e, {predicted0 * 2, std::nullopt}, {"", "too big"});
  ASSERT_TRUE(e.measured.has_value());
  EXPECT_EQ(e.measured->devices, 1);
  EXPECT_DOUBLE_EQ(e.measured->max_compute_ms, predicted0 * 2);
  EXPECT_NEAR(e.measured->mape_percent, 50.0, 1e-9);
  auto doc = evaluation_to_json(e);
  EXPECT_TRUE(doc["devices"][1]["measured_compute_ms"].is_null());
  EXPECT_EQ(doc["devices"][1]["not_measured"], "too big");
  EXPECT_NE(format_evaluation(e).find("not measured: too big"), std::string::npos);
}

TEST(Evaluate, TimedAllToAllsGiveEachDevicesMeasuredStep) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  PlanEvaluation e = evaluate_plan(two_table_plan(), two_tables(), *model);
  EXPECT_THROW(attach_comm_measurements(e, MeasuredComm{{1.0, 1.0}, {1.0, 1.0}, {}}), InputError);  // compute first
  attach_measurements(e, {2.0, 3.0}, {"", ""});
  attach_comm_measurements(e, MeasuredComm{{4.0, 1.0}, {0.5, 0.25}, {}});
  ASSERT_TRUE(e.measured->max_total_ms.has_value());
  EXPECT_DOUBLE_EQ(*e.measured->max_total_ms, 6.5);  // rank 0: 2 + 4 + 0.5; rank 1: 3 + 1 + 0.25
  EXPECT_EQ(e.measured->max_total_rank, 0);
  auto doc = evaluation_to_json(e);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["measured_total_ms"].get<double>(), 4.25);
  EXPECT_DOUBLE_EQ(doc["devices"][0]["measured_fw_comm_ms"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(doc["measured"]["max_total_ms"].get<double>(), 6.5);
  const std::string text = format_evaluation(e);
  EXPECT_NE(text.find("m_total"), std::string::npos) << text;
  EXPECT_NE(text.find("measured step (compute, then the collectives"), std::string::npos) << text;
  EXPECT_NE(text.find("max 6.500 ms on rank 0"), std::string::npos) << text;
  EXPECT_EQ(text.find("all-reduce"), std::string::npos) << text;
}

// The data-parallel gradients' all-reduce joins each device's backward, as the prediction counts it.
TEST(Evaluate, TimedAllReduceJoinsTheBackward) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  PlanEvaluation e = evaluate_plan(two_table_plan(), two_tables(), *model);
  attach_measurements(e, {2.0, 3.0}, {"", ""});
  attach_comm_measurements(e, MeasuredComm{{4.0, 1.0}, {0.5, 0.25}, {1.0, 3.0}});
  EXPECT_DOUBLE_EQ(*e.measured->max_total_ms, 7.5);  // rank 0: 2 + 4 + 0.5 + 1; rank 1: 3 + 1 + 0.25 + 3
  EXPECT_EQ(e.measured->max_total_rank, 0);
  auto doc = evaluation_to_json(e);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["measured_bw_comm_ms"].get<double>(), 3.25);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["measured_allreduce_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["measured_total_ms"].get<double>(), 7.25);
  const std::string text = format_evaluation(e);
  EXPECT_NE(text.find("all-reduce of the data-parallel gradients (in m_bw): up to 3.000 ms"), std::string::npos)
      << text;
}

// What a plan's step is timed with: all-to-all widths of the table-, column- and table-row-wise shards only;
// row-wise tables as one reduce-scatter width; replicas as the gradients' floats.
TEST(MeasuredComm, EachShardingTypeGoesToItsCollective) {
  std::vector<Table> tables = {make_table("tw", 1000, 16, 2.0), make_table("rw", 9000, 24, 8.0),
                               make_table("dp", 100, 8, 1.0), make_table("cw", 500, 32, 1.0)};
  Plan plan;
  plan.cluster = cluster_of(4);
  plan.cluster.devices_per_host = 2;
  plan.tables.push_back(table_wise_sharding(tables[0], 1));
  plan.tables.push_back(row_wise_sharding(tables[1], 4));
  plan.tables.push_back(data_parallel_sharding(tables[2], 4));
  plan.tables.push_back(sharding_of(tables[3], {Shard{2, 0, 0, 500, 20}, Shard{3, 0, 20, 500, 12}}));
  auto comm = comm_to_measure(plan, {1.0, 2.0, 3.0, 4.0});
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(comm->dim_sums, (std::vector<int64_t>{0, 16, 20, 12}));
  EXPECT_EQ(comm->rw_dim, 24);
  EXPECT_EQ(comm->allreduce_floats, 100 * 8);
  EXPECT_FALSE(comm_to_measure(plan, {1.0, std::nullopt, 3.0, 4.0}).has_value());
  EXPECT_EQ(measured_step_ms({1.0, 2.0}, MeasuredComm{{0.5, 0.5}, {0.25, 0.25}, {2.0, 1.0}}),
            (std::vector<double>{3.75, 3.75}));
}

// Three tasks of `first_tables`, `first_tables` + 1, ... varied tables on `devices` GPUs.
TaskSet tiny_task_set(int devices, int first_tables) {
  TaskSet set;
  set.name = "tiny";
  set.num_devices = devices;
  set.memory_per_device_bytes = 1ll << 30;
  for (int t = 0; t < 3; ++t) set.tasks.push_back(ShardingTask{testing::varied_tables(first_tables + t)});
  return set;
}

// A stand-in for real kernels: a shard set's "measured" compute is its width sum, so the bench's
// bookkeeping can be checked exactly.
std::vector<std::optional<double>> width_sums_as_compute(const std::vector<std::vector<Table>>& sets) {
  std::vector<std::optional<double>> out;
  for (const auto& set : sets) {
    int64_t width = 0;
    for (const auto& piece : set) width += piece.dim;
    out.emplace_back(static_cast<double>(width));
  }
  return out;
}

TEST(BenchMeasured, AveragesOnlyTasksEveryAlgorithmMeasured) {
  TaskSet set = tiny_task_set(2, 6);
  BenchMeasure measure;
  measure.tasks = 2;
  int calls = 0;
  measure.measure_sets = [&calls](const std::vector<std::vector<Table>>& sets) {
    ++calls;
    EXPECT_FALSE(sets.empty());
    return width_sums_as_compute(sets);
  };
  BenchResult result = run_bench(set, {"dim_greedy", "size_greedy"}, testing::planner_config(), true, &measure);
  EXPECT_EQ(calls, 2);  // once per measured task: its plans' devices are measured together
  EXPECT_EQ(result.measured_tasks, 2);
  int wins = 0;
  for (const auto& s : result.algorithms) {
    EXPECT_EQ(s.measured, 2);
    EXPECT_FALSE(s.tasks[2].measured_max_compute_ms.has_value());
    double expected = (*s.tasks[0].measured_max_compute_ms + *s.tasks[1].measured_max_compute_ms) / 2;
    EXPECT_DOUBLE_EQ(s.mean_measured_max_compute_ms, expected);
    wins += s.measured_wins;
  }
  EXPECT_GE(wins, 2);
  EXPECT_NE(format_bench(result).find("measured ms"), std::string::npos);
  EXPECT_EQ(bench_to_json(result, false)["measured_tasks"], 2);
}

// The step: a device's measured compute (its width sum, as above), then its all-to-alls (stand-ins: the
// forward 1 ms per device index, the backward 0.5 ms), and the slowest device bounds the plan.
TEST(BenchMeasured, StepAddsTheTimedAllToAllsToTheMeasuredCompute) {
  TaskSet set = tiny_task_set(3, 7);
  BenchMeasure measure;
  measure.tasks = 2;
  measure.measure_sets = width_sums_as_compute;
  measure.comm_batch_size = 96;
  int calls = 0;
  std::vector<CommToMeasure> seen;
  measure.time_comm = [&](const std::vector<CommToMeasure>& plans, int64_t batch_size) {
    ++calls;
    EXPECT_EQ(batch_size, 96);
    seen = plans;
    std::vector<std::optional<MeasuredComm>> out;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (i == 1) {  // not timed: that task drops out of the step means
        out.emplace_back();
        continue;
      }
      MeasuredComm comm;
      for (std::size_t d = 0; d < plans[i].dim_sums.size(); ++d) {
        comm.fw_ms.push_back(static_cast<double>(d));
        comm.bw_ms.push_back(0.5);
      }
      out.emplace_back(comm);
    }
    return out;
  };
  BenchResult result = run_bench(set, {"dim_greedy", "size_greedy"}, testing::planner_config(), true, &measure);
  EXPECT_EQ(calls, 1);         // every measured plan's all-to-alls in one go
  ASSERT_EQ(seen.size(), 4u);  // 2 tasks x 2 algorithms, task by task
  for (const auto& plan : seen) {
    ASSERT_EQ(plan.dim_sums.size(), 3u);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(plan.compute_ms[d], static_cast<double>(plan.dim_sums[d]));
  }
  // seen[1] is task 0's size_greedy plan, which was not timed, so only task 1 has a step for everyone.
  EXPECT_EQ(result.step_measured_tasks, 1);
  const TaskOutcome& timed = result.algorithms[0].tasks[1];
  double expected = 0.0;
  for (std::size_t d = 0; d < 3; ++d)
    expected = std::max(expected, seen[2].compute_ms[d] + static_cast<double>(d) + 0.5);
  ASSERT_TRUE(timed.measured_max_step_ms.has_value());
  EXPECT_DOUBLE_EQ(*timed.measured_max_step_ms, expected);
  EXPECT_DOUBLE_EQ(result.algorithms[0].mean_measured_max_step_ms, expected);
  EXPECT_DOUBLE_EQ(result.algorithms[0].mean_predicted_max_step_ms, timed.cost_ms);
  EXPECT_FALSE(result.algorithms[1].tasks[0].measured_max_step_ms.has_value());
  EXPECT_NE(format_bench(result).find("step per plan"), std::string::npos);
  auto doc = bench_to_json(result, true);
  EXPECT_EQ(doc["step_measured_tasks"], 1);
  EXPECT_DOUBLE_EQ(doc["algorithms"]["dim_greedy"]["measured"]["task_max_step_ms"][1].get<double>(), expected);
  EXPECT_TRUE(doc["algorithms"]["size_greedy"]["measured"]["task_max_step_ms"][0].is_null());
  // Each measurement has the model's figure beside it, for tools/paired_compare.py.
  EXPECT_DOUBLE_EQ(doc["algorithms"]["dim_greedy"]["measured"]["task_predicted_max_compute_ms"][1].get<double>(),
                   timed.predicted_max_compute_ms);
  EXPECT_GT(timed.predicted_max_compute_ms, 0.0);
}

}  // namespace
}  // namespace shardplan
