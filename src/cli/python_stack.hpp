#pragma once
// shard-plan's Python stack (torch, fbgemm-gpu, TorchRec and the shardplan package), for the planners
// that run TorchRec's own planner and the measurements that run FBGEMM's kernels.
#include <string>
#include <vector>

#include "shardplan/core/external_program.hpp"

namespace shardplan::cli {

// The program that runs TorchRec's planner when a run's `planners` or measure-loop `rivals` name one of
// external_planner_names(), else an empty one. The interpreter is $SHARDPLAN_PYTHON, else the source tree's
// .venv (scripts/setup-python.sh), else python3; the package is the one bundled beside this binary. Throws
// InputError (exit 2) saying how to install the stack when that Python cannot import it.
ExternalProgram torchrec_program_for(std::vector<std::string> planners, const std::vector<std::string>& rivals);

// The worker that times shard sets with FBGEMM's table-batched embedding (shardplan.measure.tbe_worker),
// found and checked as above.
ExternalProgram tbe_worker_program();

}  // namespace shardplan::cli
