#pragma once
// After the NeuroShard search: converts tables to row-wise, table-row-wise or data-parallel sharding where
// the cost model predicts a faster slowest device, and moves shards off the slowest device once others
// have left it (docs/sharding-types.md). Greedy: each move is the best of the slowest device's candidates.
#include <memory>
#include <vector>

#include "shardplan/core/deadline.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/search/neuroshard_planner.hpp"  // TypePassMemo

namespace shardplan {

struct TypePassOptions {
  ShardingTypeSet allowed = ShardingTypeSet::all();
  int max_moves = 64;
  int relocation_targets = 4;  // the least loaded devices a shard on the slowest one may move to
  int threads = 1;
  Deadline deadline;                   // polled before each move and between batches of the candidates it scores
  std::shared_ptr<TypePassMemo> memo;  // null: the pass keeps its own
};

struct TypePassStats {
  int moves = 0;      // changes accepted
  int converted = 0;  // tables given another sharding type
  bool cut_short = false;
  double predicted_ms = 0.0;  // the plan's max total as the pass scored it last (0 when it did not run)
};

// `plan` holds table-wise and column-wise tables that fit; the result fits too and its predicted slowest
// device is no slower. Deterministic for any thread count.
Plan choose_sharding_types(Plan plan, const std::vector<Table>& tables, const CostModel& model,
                           const TypePassOptions& options, TypePassStats* stats = nullptr);

}  // namespace shardplan
