#pragma once
// Planners run as another program (TorchRec's own planner, through shard-plan's Python package): the
// program reads a tables file and the cluster, and writes a shard-plan/1 plan that this side reads,
// validates and completes like any other.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/deadline.hpp"

#include "shardplan/core/external_program.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

// How long one plan may take: `seconds` (0: no limit) from `start`, or from the call when unset (bench:
// per task), as NeuroShardConfig's time limit; and the global batch it plans for (0: the program's
// default), passed per rank as --batch-size.
struct ExternalPlanLimits {
  double seconds = 0;
  std::optional<std::chrono::steady_clock::time_point> start;
  int64_t global_batch_size = 0;
};

// Runs `program` + `--tables FILE --gpus N --gpus-per-host K --mem-per-gpu BYTES --optimizer NAME
// --sharding-types LIST [--batch-size B/N] -o PLAN` + `arguments` once per plan. Its exit 3 becomes InfeasibleError, 2
// InputError, anything else but 0 RuntimeFailure, each carrying what it printed on stderr. At the
// earlier of `limit` and `deadline` it is killed, with all it started, and DeadlinePassed thrown.
std::unique_ptr<Planner> make_external_planner(std::string name, ExternalProgram program,
                                               std::vector<std::string> arguments, ShardingTypeSet sharding_types,
                                               ExternalPlanLimits limit = {}, Deadline deadline = {});

}  // namespace shardplan
