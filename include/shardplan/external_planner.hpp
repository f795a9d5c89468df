#pragma once
// Planners run as another program (TorchRec's own planner, through shard-plan's Python package): the
// program reads a tables file and the cluster, and writes a shard-plan/1 plan that this side reads,
// validates and completes like any other.
#include <memory>
#include <string>
#include <vector>

#include "shardplan/external_program.hpp"
#include "shardplan/planner.hpp"

namespace shardplan {

// Runs `program` + `--tables FILE --gpus N --gpus-per-host K --mem-per-gpu BYTES --optimizer NAME
// --sharding-types LIST -o PLAN` + `arguments` once per plan. Its exit 3 becomes InfeasibleError, 2
// InputError, anything else but 0 RuntimeFailure, each carrying what it printed on stderr.
std::unique_ptr<Planner> make_external_planner(std::string name, ExternalProgram program,
                                               std::vector<std::string> arguments, ShardingTypeSet sharding_types);

}  // namespace shardplan
