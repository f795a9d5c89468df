#pragma once
// The shard sets `shard-plan calibrate` measures. A calibration has a few hundred samples, not
// thousands, so they must be the sets the planner will be judged on: devices of real plans (many
// shards, column pieces, memory up to a device's share), alternating with random draws like
// collect-costs' that keep the feature space covered. Sample i depends only on (seed, i) and the model
// that plans, so an interrupted calibration resumes to the same sets.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct CalibrationSampling {
  int max_tables = 24;                   // tables per random draw; a plan's device holds what it holds
  int64_t memory_cap_bytes = 2ll << 30;  // a device's memory share: no set's fp32 weights exceed it
  uint64_t seed = 0;
};

// One sample's shards (tables or column pieces, fp32), and where it came from ("plan:torchrec on 4
// devices, rank 2" or "random draw").
struct CalibrationSet {
  std::vector<Table> shards;
  std::string origin;
};

// Even samples: a task of 2 to 8 devices drawn from the pool (tables at random widths, filling up to
// about 70% of the devices' memory), planned by one of the planners in turn (neuroshard with `model`,
// torchrec, the greedy heuristics), and one of its devices. Odd samples and plans that fail: a random
// draw of 1 to max_tables pool tables within the cap. Throws InputError when the cap holds no pool table.
CalibrationSet draw_calibration_set(const std::vector<Table>& pool, const CalibrationSampling& sampling,
                                    const std::shared_ptr<const CostModel>& model, int64_t index);

// A whole plan, for timing its all-to-all (calibrate --comm-ranks): each device's shards.
struct CalibrationPlan {
  std::vector<DeviceShards> devices;  // per rank, as the planner's score sees them (widths, pieces)
  std::string origin;
};

// Plan i of `devices` devices: a task drawn as for the even sets (from a stream of its own), planned by
// each planner in turn. Nullopt when the drawn task cannot be planned; plan i depends only on (seed, i),
// the device count and the model.
std::optional<CalibrationPlan> draw_calibration_plan(const std::vector<Table>& pool,
                                                     const CalibrationSampling& sampling,
                                                     const std::shared_ptr<const CostModel>& model, int devices,
                                                     int64_t index);

// Whether sample i is held out of the fine-tuning to measure the calibrated model's error: a fixed
// share of indices, the same on every resume.
bool is_held_out(uint64_t seed, int64_t index, double fraction);

}  // namespace shardplan
