#pragma once
// A program shard-plan runs for what it does not do itself: TorchRec's planner (external_planner.hpp), FBGEMM's
// kernels (the fbgemm-tbe timer).
#include <string>
#include <vector>

namespace shardplan {

struct ExternalProgram {
  std::vector<std::string> command;      // the program and its first arguments
  std::vector<std::string> environment;  // NAME=value entries it needs beyond this process's
};

}  // namespace shardplan
