#pragma once
// How a plan compares with what the simpler planners make of the same tables.
#include <string>
#include <vector>

#include "shardplan/cluster.hpp"
#include "shardplan/cost_model.hpp"
#include "shardplan/planner.hpp"
#include "shardplan/report.hpp"
#include "shardplan/table.hpp"

namespace shardplan {

// The planners a NeuroShard plan is compared with: every registered one but NeuroShard itself and
// `random`. Those left are TorchRec's and the greedy heuristics: deterministic, and milliseconds even for
// hundreds of tables on 128 GPUs, so comparing costs little. `random` is a sanity floor no one would
// deploy, so beating it says nothing.
std::vector<std::string> baseline_planner_names();

// Plans the tables with each named planner and scores the plan's max device total with `model`. A
// planner that fails (infeasible, say, or not done by config.deadline) is reported with its reason,
// never thrown; past the deadline the rest are not started.
std::vector<BaselineOutcome> compare_with_baselines(const std::vector<std::string>& planners,
                                                    const std::vector<Table>& tables, const Cluster& cluster,
                                                    const PlannerConfig& config, const CostModel& model);

}  // namespace shardplan
