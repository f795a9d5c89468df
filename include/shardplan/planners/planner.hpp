#pragma once
// Planners turn tables and a cluster into a plan. They are chosen by name (`--algo`).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/core/external_program.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/search/measure_loop_config.hpp"
#include "shardplan/search/neuroshard_config.hpp"

namespace shardplan {

struct PlannerConfig {
  uint64_t seed = 0;
  std::shared_ptr<const CostModel> cost_model;  // what neuroshard searches against
  NeuroShardConfig neuroshard;
  // neuroshard_measured: its loop, and how it measures shard sets on this machine (unset: unavailable).
  MeasureLoopConfig measure_loop;
  ShardSetMeasurer measure_sets;
  // The program that runs TorchRec's own planner (external_planner_names); no command: unavailable.
  ExternalProgram torchrec_program;
  // Samples per step over all devices, for planners whose estimates take a batch (TorchRec's planner gets
  // its share per rank): the global batch of shard-plan's measurements by default.
  int64_t global_batch_size = 2048;
  // Planners whose proposals take long (TorchRec's) give up past it with DeadlinePassed: a comparison
  // under a time limit drops them. NeuroShard stops at its own time limit (NeuroShardConfig) instead,
  // with the best plan it has.
  Deadline deadline;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  // Returns a plan that fits every device's usable memory, or throws InfeasibleError saying why not.
  virtual Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const = 0;
};

// Throws SettingError("planner") for an unknown name (listing the known ones), SettingError("measure loop
// rivals") for a rival that is not a baseline, InputError for a planner's missing cost model.
std::unique_ptr<Planner> make_planner(std::string_view name, const PlannerConfig& config);

const std::vector<std::string>& planner_names();

// Planners that measure on this machine while planning (make_planner builds them only with
// PlannerConfig::measure_sets): not among planner_names(), which every build can run anywhere.
const std::vector<std::string>& measuring_planner_names();

// Planners run as another program (TorchRec's own planner through the Python package; make_planner
// builds them only with PlannerConfig::torchrec_program): not among planner_names() either.
const std::vector<std::string>& external_planner_names();

}  // namespace shardplan
