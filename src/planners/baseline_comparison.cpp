#include "shardplan/baseline_comparison.hpp"

#include <algorithm>
#include <exception>

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
    try {
      Plan plan = make_planner(name, config)->plan(tables, cluster);
      std::vector<DeviceCost> costs = score_plan(plan, tables, model);
      double max_ms = 0.0;
      for (const auto& c : costs) max_ms = std::max(max_ms, c.total_ms());
      outcome.max_total_ms = max_ms;
    } catch (const std::exception& e) {
      // A baseline is context for the plan the user asked for; its failure must not cost them that plan.
      outcome.failure = e.what();
    }
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace shardplan
