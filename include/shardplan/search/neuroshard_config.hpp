#pragma once
// The NeuroShard search's parameters (every one a flag of `shard-plan plan`).
#include <chrono>
#include <optional>

#include "shardplan/core/sharding_types.hpp"

namespace shardplan {

struct NeuroShardConfig {
  int beam_width = 3;       // plans kept per step (k)
  int candidates = 10;      // n largest by memory plus n most expensive, per plan
  int steps = 0;            // split steps (L); 0: auto_split_steps
  int patience = 10;        // stop after this many steps without a better plan; 0: never
  double min_gain = 0.001;  // a plan is better, for patience, when it lowers the cost by this fraction
  int grid_points = 11;     // width-cap multipliers s tried by the placement
  double grid_min = 1.0;
  double grid_max = 1.5;
  int refine_rounds = 64;         // local-search moves after the search (placement_refinement); 0: none
  int threads = 0;                // 0: every core; plans are identical for any count
  double time_limit_seconds = 0;  // stop the search (then the refinement) at this many seconds; 0: none
  // When the time limit's clock started; unset: when the search starts. A command that reads large
  // inputs first starts it itself, so that the limit bounds the whole run, and earlier still by what
  // follows the search (plan: scoring, the report, writing).
  std::optional<std::chrono::steady_clock::time_point> time_limit_start;
  bool show_progress = false;  // progress on stderr once the search has run for a second (the CLI's plan)
  // Types the plan may use: the search splits columns (when column_wise is allowed), then converts tables
  // to the other allowed types where the cost model predicts a faster slowest device.
  ShardingTypeSet sharding_types = ShardingTypeSet::all();
  int type_moves = 64;  // changes the conversion pass may make
  // Also plan with the baselines and start from the best of their plans where it scores better than the
  // search's, or where the search finds none (baseline_starts.hpp): never worse than a baseline.
  bool baseline_starts = true;
};

// The step budget when --steps is 0: 10 (the paper's) on small clusters, growing with the devices and
// tables, because at 128 GPUs single-table halvings each fix one device at most.
int auto_split_steps(int num_tables, int num_devices);

// Whether a search of this many pieces (tables and their first halvings) on this many devices takes the
// large path: each step ranks its children by an incremental estimate and places only the best 2k, over
// three grid points (neuroshard_planner.cpp). Small searches place every child, as the method does.
bool is_large_search(int64_t pieces, int num_devices);

// Throws SettingError naming the setting when a parameter is out of range.
void validate_neuroshard_config(const NeuroShardConfig& config);

}  // namespace shardplan
