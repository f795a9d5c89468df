#pragma once
// How a plan compares with what the simpler planners make of the same tables.
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

// The planners a NeuroShard plan is compared with: every registered one but NeuroShard itself and
// `random`. Those left are TorchRec's and the greedy heuristics: deterministic, and milliseconds even for
// hundreds of tables on 128 GPUs, so comparing costs little. `random` is a sanity floor no one would
// deploy, so beating it says nothing.
std::vector<std::string> baseline_planner_names();

// One baseline's plan (none where it failed) and its outcome.
struct BaselineRun {
  BaselineOutcome outcome;
  std::optional<Plan> plan;
};

// Plans the tables with each named planner, on up to `threads` threads (each into its own slot, so the
// result does not depend on the count), and scores each plan's max device total with `model`, in order.
// A planner that fails (infeasible, say, or not done by config.deadline) is reported with its reason,
// never thrown; past the deadline the rest are not started.
std::vector<BaselineRun> run_baselines(const std::vector<std::string>& planners, const std::vector<Table>& tables,
                                       const Cluster& cluster, const PlannerConfig& config, const CostModel& model,
                                       int threads = 1);

// run_baselines' outcomes, on one thread. The planners whose outcome is in `known` (what a plan's
// baseline starts found, SearchSummary::baselines) are not planned again.
std::vector<BaselineOutcome> compare_with_baselines(const std::vector<std::string>& planners,
                                                    const std::vector<Table>& tables, const Cluster& cluster,
                                                    const PlannerConfig& config, const CostModel& model,
                                                    const std::vector<BaselineOutcome>& known = {});

}  // namespace shardplan
