#include "shardplan/bench/bench.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/costs/plan_measurement.hpp"

namespace shardplan {

namespace {

// Plans, validates and scores one task; returns the plan when it is valid.
std::optional<Plan> plan_task(const Planner& planner, const ShardingTask& task, const Cluster& cluster,
                              const CostModel& model, TaskOutcome& outcome) {
  auto start = std::chrono::steady_clock::now();
  try {
    Plan plan = planner.plan(task.tables, cluster);
    outcome.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ValidationResult check = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), task.tables, "plan");
    if (!check.valid()) {
      outcome.error = "invalid plan: " + check.problems.front();
      return std::nullopt;
    }
    const CostSummary costs = summarise_costs(score_plan(plan, task.tables, model));
    outcome.cost_ms = costs.max_ms;
    outcome.predicted_max_compute_ms = costs.max_compute_ms;
    outcome.valid = true;
    return plan;
  } catch (const InfeasibleError& e) {
    outcome.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.error = e.what();
    return std::nullopt;
  }
}

// The slowest device, when every device was measured.
std::optional<double> measured_max(const DeviceComputeMs& devices) {
  double slowest = 0.0;
  for (const auto& device : devices) {
    if (!device) return std::nullopt;
    slowest = std::max(slowest, *device);
  }
  return slowest;
}

// Counts a win for every algorithm whose value on task t is the lowest (ties: all of them); value_of gives
// nullopt for an algorithm without a value there.
template <typename ValueOf>
void count_wins(std::vector<AlgorithmSummary>& algorithms, int AlgorithmSummary::*wins, const ValueOf& value_of) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& s : algorithms) {
    if (auto v = value_of(s)) best = std::min(best, *v);
  }
  for (auto& s : algorithms) {
    if (auto v = value_of(s); v && *v <= best * (1 + 1e-9)) ++(s.*wins);
  }
}

// Where a measured quantity and its prediction live in the summaries.
struct MeasuredQuantity {
  std::optional<double> TaskOutcome::*measured;
  double TaskOutcome::*predicted;
  int BenchResult::*tasks;
  int AlgorithmSummary::*count;
  double AlgorithmSummary::*mean_predicted;
  double AlgorithmSummary::*mean_measured;
  int AlgorithmSummary::*wins;
};

// Averages over the tasks every algorithm has a measurement for, so the means compare like with like.
void summarise_measured(BenchResult& result, std::size_t measured_tasks, const MeasuredQuantity& q) {
  for (std::size_t t = 0; t < measured_tasks; ++t) {
    bool everyone = std::all_of(result.algorithms.begin(), result.algorithms.end(),
                                [&](const AlgorithmSummary& s) { return (s.tasks[t].*q.measured).has_value(); });
    if (!everyone) continue;
    ++(result.*q.tasks);
    for (auto& s : result.algorithms) {
      ++(s.*q.count);
      s.*q.mean_predicted += s.tasks[t].*q.predicted;
      s.*q.mean_measured += *(s.tasks[t].*q.measured);
    }
    count_wins(result.algorithms, q.wins, [&](const AlgorithmSummary& s) { return s.tasks[t].*q.measured; });
  }
  for (auto& s : result.algorithms) {
    if (s.*q.count == 0) continue;
    s.*q.mean_predicted /= s.*q.count;
    s.*q.mean_measured /= s.*q.count;
  }
}

// The plans of measured tasks whose all-to-alls are timed at the end, in one go (timing them starts a process
// per rank), and where each one's step goes.
struct StepsToTime {
  std::vector<std::pair<std::size_t, std::size_t>> owners;  // (task, algorithm)
  std::vector<CommToMeasure> comms;
};

// Measures task t's valid plans together; each gets its measured max compute and, when the all-to-alls are
// to be timed, joins `steps`.
void measure_task(BenchResult& result, std::size_t t, const std::vector<std::optional<Plan>>& plans,
                  const std::vector<Table>& tables, const BenchMeasure& measure, StepsToTime& steps) {
  std::vector<const Plan*> valid;
  for (const auto& plan : plans) {
    if (plan) valid.push_back(&*plan);
  }
  std::vector<DeviceComputeMs> measured = measure_plan_devices(valid, tables, measure.measure_sets);
  for (std::size_t a = 0, v = 0; a < plans.size(); ++a) {
    if (!plans[a]) continue;
    const DeviceComputeMs& devices = measured.at(v++);
    result.algorithms[a].tasks[t].measured_max_compute_ms = measured_max(devices);
    if (!measure.time_comm) continue;
    if (auto comm = comm_to_measure(*plans[a], devices)) {
      steps.owners.push_back({t, a});
      steps.comms.push_back(std::move(*comm));
    }
  }
}

// Times the all-to-alls of every measured plan: a plan's step is its slowest device's measured compute plus
// its timed all-to-alls.
void time_steps(BenchResult& result, const BenchMeasure& measure, const StepsToTime& steps) {
  if (steps.comms.empty()) return;
  spdlog::info("timing the all-to-alls of {} measured plans", steps.comms.size());
  std::vector<std::optional<MeasuredComm>> timed = measure.time_comm(steps.comms, measure.comm_batch_size);
  for (std::size_t i = 0; i < steps.comms.size(); ++i) {
    if (!timed.at(i)) continue;
    const auto [t, a] = steps.owners[i];
    const std::vector<double> step_ms = measured_step_ms(steps.comms[i].compute_ms, *timed[i]);
    result.algorithms[a].tasks[t].measured_max_step_ms = *std::max_element(step_ms.begin(), step_ms.end());
  }
}

// Each algorithm's mean predicted cost over its valid plans, its planning times, and the wins on cost.
void summarise_plans(BenchResult& result, std::size_t tasks) {
  for (auto& summary : result.algorithms) {
    std::vector<double> seconds;
    double sum = 0.0;
    for (const auto& t : summary.tasks) {
      seconds.push_back(t.plan_seconds);
      if (t.valid) {
        sum += t.cost_ms;
        ++summary.valid;
      }
    }
    summary.mean_cost_ms = summary.valid ? sum / summary.valid : std::numeric_limits<double>::quiet_NaN();
    summary.median_plan_seconds = median(seconds);
    summary.max_plan_seconds = seconds.empty() ? 0.0 : *std::max_element(seconds.begin(), seconds.end());
  }
  for (std::size_t t = 0; t < tasks; ++t) {
    count_wins(result.algorithms, &AlgorithmSummary::wins, [t](const AlgorithmSummary& s) {
      return s.tasks[t].valid ? std::optional<double>(s.tasks[t].cost_ms) : std::nullopt;
    });
  }
}

}  // namespace

BenchResult run_bench(const TaskSet& set, const std::vector<std::string>& algorithms, const PlannerConfig& config,
                      bool quiet, const BenchMeasure* measure) {
  if (!config.cost_model) throw InputError("bench: needs a cost model to score plans");
  BenchResult result;
  result.task_set = set.name;
  result.cost_model = config.cost_model->name();
  result.tasks = static_cast<int>(set.tasks.size());
  const Cluster cluster = set.cluster();
  std::vector<std::unique_ptr<Planner>> planners;
  for (const auto& name : algorithms) {
    planners.push_back(make_planner(name, config));
    AlgorithmSummary summary;
    summary.name = name;
    result.algorithms.push_back(std::move(summary));
  }
  Progress progress("plans", static_cast<int64_t>(set.tasks.size() * algorithms.size()), 0, quiet);
  int64_t done = 0;
  const std::size_t measured_tasks = measure ? std::min(set.tasks.size(), static_cast<std::size_t>(measure->tasks)) : 0;
  StepsToTime steps;
  for (std::size_t t = 0; t < set.tasks.size(); ++t) {
    std::vector<std::optional<Plan>> plans;
    for (std::size_t a = 0; a < planners.size(); ++a) {
      TaskOutcome outcome;
      plans.push_back(plan_task(*planners[a], set.tasks[t], cluster, *config.cost_model, outcome));
      result.algorithms[a].tasks.push_back(std::move(outcome));
      progress.update(++done, algorithms[a]);
    }
    if (t >= measured_tasks) continue;
    progress.update(done, fmt::format("measuring task {}", t));
    measure_task(result, t, plans, set.tasks[t].tables, *measure, steps);
  }
  progress.finish();
  if (measure) time_steps(result, *measure, steps);

  summarise_plans(result, set.tasks.size());
  summarise_measured(
      result, measured_tasks,
      {&TaskOutcome::measured_max_compute_ms, &TaskOutcome::predicted_max_compute_ms, &BenchResult::measured_tasks,
       &AlgorithmSummary::measured, &AlgorithmSummary::mean_predicted_max_compute_ms,
       &AlgorithmSummary::mean_measured_max_compute_ms, &AlgorithmSummary::measured_wins});
  summarise_measured(result, measured_tasks,
                     {&TaskOutcome::measured_max_step_ms, &TaskOutcome::cost_ms, &BenchResult::step_measured_tasks,
                      &AlgorithmSummary::step_measured, &AlgorithmSummary::mean_predicted_max_step_ms,
                      &AlgorithmSummary::mean_measured_max_step_ms, &AlgorithmSummary::step_wins});
  return result;
}

nlohmann::ordered_json bench_to_json(const BenchResult& result, bool per_task) {
  using ojson = nlohmann::ordered_json;
  ojson algorithms = ojson::object();
  for (const auto& s : result.algorithms) {
    ojson entry = {{"mean_cost_ms", std::isnan(s.mean_cost_ms) ? ojson(nullptr) : ojson(s.mean_cost_ms)},
                   {"valid", s.valid},
                   {"tasks", result.tasks},
                   {"median_plan_seconds", s.median_plan_seconds},
                   {"max_plan_seconds", s.max_plan_seconds},
                   {"wins", s.wins}};
    if (per_task) {
      ojson costs = ojson::array();
      for (const auto& t : s.tasks) costs.push_back(t.valid ? ojson(t.cost_ms) : ojson(nullptr));
      entry["task_costs_ms"] = costs;
    }
    if (result.measured_tasks > 0) {
      entry["measured"] = {{"tasks", s.measured},
                           {"mean_predicted_max_compute_ms", s.mean_predicted_max_compute_ms},
                           {"mean_measured_max_compute_ms", s.mean_measured_max_compute_ms},
                           {"wins", s.measured_wins}};
      if (result.step_measured_tasks > 0) {
        entry["measured"]["step_tasks"] = s.step_measured;
        entry["measured"]["mean_predicted_max_step_ms"] = s.mean_predicted_max_step_ms;
        entry["measured"]["mean_measured_max_step_ms"] = s.mean_measured_max_step_ms;
        entry["measured"]["step_wins"] = s.step_wins;
      }
      if (per_task) {
        auto per_task_values = [&](std::optional<double> TaskOutcome::*value) {
          ojson values = ojson::array();
          for (const auto& t : s.tasks) values.push_back(t.*value ? ojson(*(t.*value)) : ojson(nullptr));
          return values;
        };
        entry["measured"]["task_max_compute_ms"] = per_task_values(&TaskOutcome::measured_max_compute_ms);
        // The model's figure beside each measurement (the predicted step is task_costs_ms), so a measured
        // ratio can be set against the one the planner was promised.
        ojson predicted = ojson::array();
        for (const auto& t : s.tasks) predicted.push_back(t.valid ? ojson(t.predicted_max_compute_ms) : ojson(nullptr));
        entry["measured"]["task_predicted_max_compute_ms"] = predicted;
        if (result.step_measured_tasks > 0) {
          entry["measured"]["task_max_step_ms"] = per_task_values(&TaskOutcome::measured_max_step_ms);
        }
      }
    }
    algorithms[s.name] = entry;
  }
  ojson doc = {{"task_set", result.task_set}, {"cost_model", result.cost_model}, {"tasks", result.tasks}};
  if (result.measured_tasks > 0) doc["measured_tasks"] = result.measured_tasks;
  if (result.step_measured_tasks > 0) doc["step_measured_tasks"] = result.step_measured_tasks;
  doc["algorithms"] = algorithms;
  return doc;
}

namespace {

// A measured-against-predicted table: per algorithm its mean predicted and measured values and wins.
std::string format_measured_table(const BenchResult& result, double AlgorithmSummary::*predicted,
                                  double AlgorithmSummary::*measured, int AlgorithmSummary::*wins) {
  std::string out =
      fmt::format("{:<20} {:>14} {:>14} {:>8} {:>6}\n", "algorithm", "predicted ms", "measured ms", "error", "wins");
  for (const auto& s : result.algorithms) {
    double error = 100.0 * (s.*predicted - s.*measured) / s.*measured;
    out +=
        fmt::format("{:<20} {:>14.3f} {:>14.3f} {:>+7.1f}% {:>6}\n", s.name, s.*predicted, s.*measured, error, s.*wins);
  }
  return out;
}

}  // namespace

std::string format_bench(const BenchResult& result) {
  std::string out =
      fmt::format("task set {}: {} tasks, plans scored by {}\n", result.task_set, result.tasks, result.cost_model);
  out += fmt::format("{:<20} {:>14} {:>9} {:>10} {:>10} {:>6}\n", "algorithm", "mean cost ms", "valid", "median s",
                     "max s", "wins");
  for (const auto& s : result.algorithms) {
    out += fmt::format("{:<20} {:>14.3f} {:>4}/{:<4} {:>10.4f} {:>10.4f} {:>6}\n", s.name, s.mean_cost_ms, s.valid,
                       result.tasks, s.median_plan_seconds, s.max_plan_seconds, s.wins);
  }
  if (result.measured_tasks > 0) {
    out += fmt::format("\nmax compute per plan on this machine's kernels, mean over the first {} tasks:\n",
                       result.measured_tasks);
    out += format_measured_table(result, &AlgorithmSummary::mean_predicted_max_compute_ms,
                                 &AlgorithmSummary::mean_measured_max_compute_ms, &AlgorithmSummary::measured_wins);
  }
  if (result.step_measured_tasks > 0) {
    out += fmt::format(
        "\nstep per plan (measured compute, then the all-to-alls timed across ranks on this host), "
        "slowest device, mean over {} tasks:\n",
        result.step_measured_tasks);
    out += format_measured_table(result, &AlgorithmSummary::mean_predicted_max_step_ms,
                                 &AlgorithmSummary::mean_measured_max_step_ms, &AlgorithmSummary::step_wins);
  }
  return out;
}

}  // namespace shardplan
