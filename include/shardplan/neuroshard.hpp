#pragma once
// The NeuroShard planner (method.md, "Search"): beam search over column-wise splits, each candidate
// placed table-wise by greedy grid search, everything scored by a cost model.
#include <memory>

#include "shardplan/cost_model.hpp"
#include "shardplan/neuroshard_config.hpp"
#include "shardplan/planner.hpp"

namespace shardplan {

std::unique_ptr<Planner> make_neuroshard_planner(std::shared_ptr<const CostModel> model, const NeuroShardConfig& config);

// The search's plan first (the one make_neuroshard_planner returns), then up to max_plans - 1 other
// distinct plans it met (the best split states of its beams, each refined), by predicted cost. Unscored.
// Throws InfeasibleError like the planner.
std::vector<Plan> neuroshard_candidate_plans(const std::vector<Table>& tables, const Cluster& cluster,
                                             std::shared_ptr<const CostModel> model, const NeuroShardConfig& config,
                                             int max_plans);

}  // namespace shardplan
