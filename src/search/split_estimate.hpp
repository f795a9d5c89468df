#pragma once
// What halving one piece would do to its parent's placement if nothing else moved: the first (wider)
// half stays, the other goes to the first device by (compute, memory, rank) that has room and holds no
// piece of the table, as the greedy placement would send it; the result is costed by the model like any
// placement (both devices' compute, every device's all-to-all). O(summary + D) per split against
// O(pieces x log D) for a placement: large searches rank every split by it and place only the best few.
#include <cstdint>
#include <vector>

#include "device_index.hpp"
#include "device_loads.hpp"
#include "grid_placement.hpp"

namespace shardplan {

class SplitEstimator {
 public:
  // `placement` must be feasible and place `pieces`.
  SplitEstimator(const std::vector<Piece>& pieces, const Placement& placement, const ShardCatalog& catalog,
                 const CostModel& model, int64_t usable_bytes);

  // The estimated plan cost after halving pieces[i] (infinity when the half finds no device). Thread-safe.
  double after_split(std::size_t i) const;

 private:
  const std::vector<Piece>& pieces_;
  const Placement& placement_;
  const ShardCatalog& catalog_;
  const CostModel& model_;
  int64_t usable_bytes_;
  DeviceLoads loads_;
  DeviceIndex index_;
  std::vector<double> compute_;                  // per device: the parent's predicted compute
  std::vector<std::vector<int>> table_devices_;  // per table: the devices holding its pieces
};

}  // namespace shardplan
