#pragma once
// Measured-in-the-loop planning (`plan --measure-loop N`, bench's `neuroshard_measured`): the NeuroShard
// search, with the shard sets that decide its plans measured on this machine's device while it runs.
// Measurements correct the model for the rest of the search (cost_correction.hpp), and the final choice
// among the search's best distinct plans is made on measured compute where it was measured. A search
// that minimises predicted cost seeks out the model's under-estimates; the loop checks exactly those.
// No LibTorch here: the measurer is handed in.
#include <memory>
#include <vector>

#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/search/measure_loop_config.hpp"
#include "shardplan/search/neuroshard_config.hpp"

namespace shardplan {

// `rivals`: the planners named by loop.rivals, built by the caller (planner_registry.cpp).
std::unique_ptr<Planner> make_measured_neuroshard_planner(std::shared_ptr<const CostModel> model,
                                                          const NeuroShardConfig& search, const MeasureLoopConfig& loop,
                                                          ShardSetMeasurer measure,
                                                          std::vector<std::shared_ptr<const Planner>> rivals = {});

}  // namespace shardplan
