#pragma once
// The NeuroShard planner (method.md, "Search"): beam search over column-wise splits, each candidate
// placed table-wise by greedy grid search, everything scored by a cost model.
#include <memory>

#include "shardplan/cost_model.hpp"
#include "shardplan/neuroshard_config.hpp"
#include "shardplan/planner.hpp"

namespace shardplan {

std::unique_ptr<Planner> make_neuroshard_planner(std::shared_ptr<const CostModel> model, const NeuroShardConfig& config);

}  // namespace shardplan
