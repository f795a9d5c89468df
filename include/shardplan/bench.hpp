#pragma once
// `shard-plan bench`: every task of a task set planned by every algorithm, each plan validated and scored
// by one cost model, so algorithms are compared on the same terms.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/dataset/task_set.hpp"
#include "shardplan/planner.hpp"

namespace shardplan {

struct TaskOutcome {
  bool valid = false;       // planned, and the plan passed validate
  double cost_ms = 0.0;     // predicted plan cost (max over devices), when valid
  double plan_seconds = 0.0;
  std::string error;        // why there is no valid plan
};

struct AlgorithmSummary {
  std::string name;
  std::vector<TaskOutcome> tasks;  // in task order
  double mean_cost_ms = 0.0;       // over the tasks with a valid plan
  int valid = 0;
  double median_plan_seconds = 0.0;
  double max_plan_seconds = 0.0;
  int wins = 0;                    // tasks where its cost is the lowest (ties: every tied algorithm)
};

struct BenchResult {
  std::string task_set;
  std::string cost_model;
  int tasks = 0;
  std::vector<AlgorithmSummary> algorithms;  // in the order asked for
};

// Runs the benchmark; `config.cost_model` scores every plan (and drives neuroshard). Shows progress.
BenchResult run_bench(const TaskSet& set, const std::vector<std::string>& algorithms, const PlannerConfig& config,
                      bool quiet);

// {"task_set", "cost_model", "tasks", "algorithms": {name: {mean_cost_ms, valid, tasks, median_plan_seconds,
// max_plan_seconds, wins}}}; with per_task, each algorithm also lists its per-task costs.
nlohmann::ordered_json bench_to_json(const BenchResult& result, bool per_task);

// The aligned table printed by `shard-plan bench`.
std::string format_bench(const BenchResult& result);

}  // namespace shardplan
