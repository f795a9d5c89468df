#include "shardplan/planners/baseline_comparison.hpp"

#include <algorithm>
#include <exception>

#include "shardplan/core/errors.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

std::vector<std::string> baseline_planner_names() {
  std::vector<std::string> names;
  for (const auto& name : planner_names()) {
    if (name != "neuroshard" && name != "random") names.push_back(name);
  }
  return names;
}

std::vector<BaselineRun> run_baselines(const std::vector<std::string>& planners, const std::vector<Table>& tables,
                                       const Cluster& cluster, const PlannerConfig& config, const CostModel& model,
                                       int threads) {
  std::vector<BaselineRun> runs(planners.size());
  parallel_for(static_cast<int>(planners.size()), threads, [&](int i) {
    BaselineRun& run = runs[static_cast<std::size_t>(i)];
    run.outcome.planner = planners[static_cast<std::size_t>(i)];
    if (config.deadline.passed()) {
      run.outcome.failure = "the time limit passed before it ran";
      run.outcome.out_of_time = true;
      return;
    }
    try {
      run.plan = make_planner(run.outcome.planner, config)->plan(tables, cluster);
    } catch (const DeadlinePassed& e) {
      run.outcome.failure = e.what();
      run.outcome.out_of_time = true;
    } catch (const std::exception& e) {
      // A baseline is context for the plan the user asked for; its failure must not cost them that plan.
      run.outcome.failure = e.what();
    }
  });
  for (BaselineRun& run : runs) {
    if (!run.plan) continue;
    try {
      run.outcome.max_total_ms = max_total_ms(score_plan(*run.plan, tables, model));
    } catch (const std::exception& e) {
      run.outcome.failure = e.what();
      run.plan.reset();
    }
  }
  return runs;
}

std::vector<BaselineOutcome> compare_with_baselines(const std::vector<std::string>& planners,
                                                    const std::vector<Table>& tables, const Cluster& cluster,
                                                    const PlannerConfig& config, const CostModel& model,
                                                    const std::vector<BaselineOutcome>& known) {
  auto known_outcome = [&](const std::string& name) {
    return std::find_if(known.begin(), known.end(), [&](const BaselineOutcome& o) { return o.planner == name; });
  };
  std::vector<std::string> missing;
  for (const auto& name : planners) {
    if (known_outcome(name) == known.end()) missing.push_back(name);
  }
  std::vector<BaselineRun> runs = run_baselines(missing, tables, cluster, config, model);
  std::vector<BaselineOutcome> outcomes;
  std::size_t next = 0;
  for (const auto& name : planners) {
    const auto found = known_outcome(name);
    outcomes.push_back(found != known.end() ? *found : std::move(runs[next++].outcome));
  }
  return outcomes;
}

}  // namespace shardplan
