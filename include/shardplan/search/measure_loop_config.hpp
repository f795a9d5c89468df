#pragma once
// The parameters of measured-in-the-loop planning (measure_loop.hpp), and how it measures.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

struct MeasureLoopConfig {
  int budget = 8;      // shard sets measured at most
  int candidates = 4;  // distinct plans the search hands over per round, compared at the end
  double ridge = 0.5;  // the table factors' shrinkage (fit_cost_correction)
  // Other planners whose plans join the candidates (`--measure-loop-rivals`): their bounding sets are
  // measured too, and one of their plans is handed over when it measures faster by more than the
  // remaining error. A search's plans are all alike; a rival's are not, and measuring tells.
  std::vector<std::string> rivals;
};

// Throws SettingError naming the setting ("measure loop budget", "measure loop candidates", "measure loop
// ridge") when one is out of its range.
void validate_measure_loop_config(const MeasureLoopConfig& config);

// Times shard sets (each a device's pieces) on this machine's device: the fastest step in ms of each,
// nullopt for a set that could not be measured.
using ShardSetMeasurer = std::function<std::vector<std::optional<double>>(const std::vector<std::vector<Table>>&)>;

}  // namespace shardplan
