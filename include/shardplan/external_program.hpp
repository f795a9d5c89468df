#pragma once
// A program another planner runs as (see external_planner.hpp).
#include <string>
#include <vector>

namespace shardplan {

struct ExternalPlannerProgram {
  std::vector<std::string> command;      // the program and its first arguments
  std::vector<std::string> environment;  // NAME=value entries it needs beyond this process's
};

}  // namespace shardplan
