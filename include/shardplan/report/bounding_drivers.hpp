#pragma once
// Why the step is as slow as it is: the device with the largest predicted total and the tables on it
// that cost it most.
#include <optional>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/report/report.hpp"

namespace shardplan {

// The device bounding the step under `model` and its `count` largest cost drivers. A table's saving is
// the device's predicted total minus its total with that table's shards left out, the rest of the plan
// unchanged. Leaving one out, rather than scoring each shard alone, is what the model supports: compute
// is not additive over a device's shards (fused kernels), and the all-to-all depends on the device's width
// and on when every device's compute ends, so a wide, cheap table can matter more than an expensive
// narrow one. nullopt when the plan has no devices.
std::optional<BoundingDevice> bounding_drivers(const Plan& plan, const std::vector<Table>& tables,
                                               const CostModel& model, int count = 3);

}  // namespace shardplan
