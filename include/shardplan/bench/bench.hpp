#pragma once
// `shard-plan bench`: every task of a task set planned by every algorithm, each plan validated and scored
// by one cost model, so algorithms are compared on the same terms.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/measured_comm.hpp"
#include "shardplan/costs/measure.hpp"
#include "shardplan/dataset/task_set.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

struct TaskOutcome {
  bool valid = false;    // planned, and the plan passed validate
  double cost_ms = 0.0;  // predicted plan cost (max over devices), when valid
  double plan_seconds = 0.0;
  std::string error;  // why there is no valid plan
  double predicted_max_compute_ms = 0.0;
  std::optional<double> measured_max_compute_ms;  // when the task was measured and every device could be
  // The step, compute plus forward and backward all-to-all, max over devices (with --measure-comm):
  std::optional<double> measured_max_step_ms;
};

struct AlgorithmSummary {
  std::string name;
  std::vector<TaskOutcome> tasks;  // in task order
  double mean_cost_ms = 0.0;       // over the tasks with a valid plan
  int valid = 0;
  double median_plan_seconds = 0.0;
  double max_plan_seconds = 0.0;
  int wins = 0;  // tasks where its cost is the lowest (ties: every tied algorithm)
  // Over the tasks measured for every algorithm (so all algorithms average the same tasks):
  int measured = 0;
  double mean_predicted_max_compute_ms = 0.0;
  double mean_measured_max_compute_ms = 0.0;
  int measured_wins = 0;  // measured tasks where its measured max compute is the lowest
  // Over the tasks whose step was measured for every algorithm:
  int step_measured = 0;
  double mean_predicted_max_step_ms = 0.0;  // the plan cost
  double mean_measured_max_step_ms = 0.0;
  int step_wins = 0;
};

struct BenchResult {
  std::string task_set;
  std::string cost_model;
  int tasks = 0;
  std::vector<AlgorithmSummary> algorithms;  // in the order asked for
  int measured_tasks = 0;                    // tasks measured for every algorithm
  int step_measured_tasks = 0;               // tasks whose whole step was measured for every algorithm
};

// Per-device measured compute of one plan (nullopt: a device that could not be measured).
using DeviceComputeMs = std::vector<std::optional<double>>;

// How `bench --measure` measures: a task's plans together, their devices' distinct shard sets in one call of
// `measure_sets` (the seam a measured-in-the-loop planner gets), so that identical devices share a
// measurement and every plan sees the machine alike; and, with `time_comm`, every measured plan's
// all-to-alls after the last task, each device starting when its compute would end.
struct BenchMeasure {
  int tasks = 0;  // the first this many tasks are measured, for every algorithm
  ShardSetMeasurer measure_sets;
  CommTimer time_comm;             // empty: the all-to-alls are not timed
  int64_t comm_batch_size = 2048;  // the global batch they are timed at
};

// Runs the benchmark; `config.cost_model` scores every plan (and drives neuroshard). With `measure`, the
// first measure->tasks tasks' plans are also measured, and with measure->time_comm their all-to-alls are
// timed after the last task, all in one call. Shows progress.
BenchResult run_bench(const TaskSet& set, const std::vector<std::string>& algorithms, const PlannerConfig& config,
                      bool quiet, const BenchMeasure* measure = nullptr);

// {"task_set", "cost_model", "tasks", "algorithms": {name: {mean_cost_ms, valid, tasks, median_plan_seconds,
// max_plan_seconds, wins}}}; with per_task, each algorithm also lists its per-task costs. Measured runs add
// "measured_tasks" and, per algorithm, a "measured" object (with per_task, its per-task measured maxima and
// the predicted max compute beside them);
// runs that timed the all-to-alls add "step_measured_tasks" and the measured step to that object.
nlohmann::ordered_json bench_to_json(const BenchResult& result, bool per_task);

// The aligned table printed by `shard-plan bench`.
std::string format_bench(const BenchResult& result);

}  // namespace shardplan
