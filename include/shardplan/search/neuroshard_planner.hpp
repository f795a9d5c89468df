#pragma once
// The NeuroShard planner (method.md, "Search"): beam search over column-wise splits, each candidate
// placed table-wise by greedy grid search, everything scored by a cost model.
#include <chrono>
#include <memory>

#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/search/neuroshard_config.hpp"

namespace shardplan {

std::unique_ptr<Planner> make_neuroshard_planner(std::shared_ptr<const CostModel> model,
                                                 const NeuroShardConfig& config);

// What several sharding-type passes over the same tables (the same vector) and cluster share: the
// pieces and conversions they summarise, each once. One pass at a time may use it.
struct TypePassMemo;
std::shared_ptr<TypePassMemo> make_type_pass_memo();

// The search's sharding-type pass (sharding_type_pass.hpp) run on another planner's plan of table- and
// column-wise tables that fit: with `config`'s allowed types, move budget, threads and time limit (its
// clock started at `start`). Returns the plan unchanged when only table- and column-wise are allowed.
Plan neuroshard_type_pass(Plan plan, const std::vector<Table>& tables, const CostModel& model,
                          const NeuroShardConfig& config, std::chrono::steady_clock::time_point start,
                          std::shared_ptr<TypePassMemo> memo = nullptr);

// The search's plan first (the one make_neuroshard_planner returns), then up to max_plans - 1 other
// distinct plans it met (the best split states of its beams, each refined), by predicted cost. Unscored.
// Throws InfeasibleError like the planner.
std::vector<Plan> neuroshard_candidate_plans(const std::vector<Table>& tables, const Cluster& cluster,
                                             std::shared_ptr<const CostModel> model, const NeuroShardConfig& config,
                                             int max_plans);

}  // namespace shardplan
