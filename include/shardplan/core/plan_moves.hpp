#pragma once
// What replanning changes: per table of a new plan, whether its shards stayed, moved, were rebuilt (the
// table's shape changed) or are new, and the bytes that takes, weights and optimizer state counted.
// Replanning (`plan --from`) records it; `validate --from` recomputes it from the two plan files alone.
#include <cstdint>
#include <optional>
#include <string_view>

#include "shardplan/core/plan.hpp"
#include "shardplan/core/replan_summary.hpp"

namespace shardplan {

// A shard's bytes that move with it: its weights and the optimizer state beside them.
int64_t shard_move_bytes(const TableSharding& table, const Shard& shard, Optimizer optimizer);

// Compares by table name; `optimizer` is the new plan's (its state moves with the weights).
PlanMoves plan_moves(const Plan& old_plan, const Plan& new_plan, Optimizer optimizer);

}  // namespace shardplan
