#pragma once
// Replanning (`plan --from OLD_PLAN --move-budget B`): the old plan's placement under the current tables,
// changed only by the shard moves that lower the predicted cost most per byte moved, within the budget.
// Tables the old plan holds with the same shape stay where they are unless a chosen move takes them; new
// tables, and tables whose rows, dim or dtype changed (rebuilt anyway), are placed where the model
// predicts the lowest maximum and cost no budget (the search may move and split their pieces for free);
// tables no longer in the file are dropped. A budget of nothing moves nothing beyond placing those.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/sharding_type.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

inline constexpr const char* kReplanAlgorithm = "neuroshard_replan";

struct ReplanConfig {
  int64_t move_budget_bytes = 0;  // the bytes chosen moves may take, weights and optimizer state counted
  std::string from;               // the old plan's file, as the new plan records it
  // What new and rebuilt tables may take (they are placed table-wise, or column-wise when they must be
  // split), as --sharding-types allows it.
  ShardingTypeSet sharding_types = ShardingTypeSet::all();
  // Kept tables' shards move whole, never re-cut nor given another type: what TorchRec's reshard applies.
  bool keep_shapes = false;
  int max_moves = 4096;  // chosen moves at most
  int threads = 0;       // candidate moves evaluated at once (0: every core); the plan does not depend on it
  Deadline deadline;     // no move is started past it
};

// The bytes a budget of `percent` of the tables' bytes (weights and optimizer state) allows.
int64_t move_budget_from_percent(double percent, const std::vector<Table>& tables, Optimizer optimizer);

// The new plan, unscored, with `replan` filled in (its changes recomputed by plan_moves). Throws
// InputError when the old plan is for another device count or host layout, or a new table may take
// neither table- nor column-wise sharding; InfeasibleError when the old placement cannot be made to fit
// within the budget, naming what does not fit and the budget that would do.
Plan replan(const Plan& old_plan, const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model,
            const ReplanConfig& config);

}  // namespace shardplan
