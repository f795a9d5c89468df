#pragma once
// Local search after the greedy grid placement: moves or swaps pieces off the costliest devices while
// that lowers the plan's predicted maximum. The greedy pass places each piece once, in cost
// order, by compute alone; it cannot undo an early choice that later leaves one device slowest (on a
// 10-table, 4-GPU task it put two heavy tables together where TorchRec's planner kept them apart).
#include <vector>

#include "grid_placement.hpp"
#include "shard_catalog.hpp"
#include "shardplan/core/cluster.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct RefineOptions {
  int max_rounds = 64;      // accepted moves at most; each lowers the maximum, so it ends anyway
  int source_devices = 4;   // pieces leave only the costliest devices (and the one with most compute)
  int target_devices = 16;  // and go only to the cheapest ones: both bound the work per round
  int threads = 1;          // changes evaluated at once; the result does not depend on it
  // Polled before each round and after each batch of changes it evaluates (a batch costs about as much
  // whatever the devices hold), so a round over thousands of pieces per device stops on time too.
  Deadline deadline;
};

struct RefineStats {
  int rounds = 0;          // moves accepted
  bool cut_short = false;  // the deadline stopped it before it ran out of improving moves
};

// A placement at least as good as `start` (feasible placements only; others come back unchanged). The
// pieces of one table stay on different devices and every device within its usable memory.
// Deterministic: candidates are tried in a fixed order and ties keep the first.
Placement refine_placement(const std::vector<Piece>& pieces, const Placement& start, const ShardCatalog& catalog,
                           const CostModel& model, int64_t usable_bytes, RefineOptions options = {},
                           RefineStats* stats = nullptr);

}  // namespace shardplan
