#include "shardplan/baseline_comparison.hpp"

#include <exception>

#include "shardplan/errors.hpp"

namespace shardplan {

std::vector<std::string> baseline_planner_names() {
  std::vector<std::string> names;
  for (const auto& name : planner_names()) {
    if (name != "neuroshard" && name != "random") names.push_back(name);
  }
  return names;
}

std::vector<BaselineOutcome> compare_with_baselines(const std::vector<std::string>& planners,
                                                    const std::vector<Table>& tables, const Cluster& cluster,
                                                    const PlannerConfig& config, const CostModel& model) {
  std::vector<BaselineOutcome> outcomes;
  for (const auto& name : planners) {
    BaselineOutcome outcome{name, std::nullopt, ""};
    if (config.deadline.passed()) {
      outcome.failure = "the time limit passed before it ran";
      outcome.out_of_time = true;
      outcomes.push_back(std::move(outcome));
      continue;
    }
    try {
      Plan plan = make_planner(name, config)->plan(tables, cluster);
      outcome.max_total_ms = max_total_ms(score_plan(plan, tables, model));
    } catch (const DeadlinePassed& e) {
      outcome.failure = e.what();
      outcome.out_of_time = true;
    } catch (const std::exception& e) {
      // A baseline is context for the plan the user asked for; its failure must not cost them that plan.
      outcome.failure = e.what();
    }
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace shardplan
