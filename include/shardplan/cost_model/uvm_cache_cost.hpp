#pragma once
// What a table kept in host memory behind an HBM cache (TorchRec's fused_uvm_caching) adds to its device's
// step: the cache's misses cross the host link (docs/cost-models.md, "UVM caching"). The lookups that hit
// cost what the fused kernel's do, so the compute model's prediction for the piece stands and this is added.
#include <cstdint>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct UvmCacheCost {
  CacheMissEstimate misses;
  double fill_ms = 0.0;      // inserted misses: each row read once (its write-back overlaps on the duplex link)
  double conflict_ms = 0.0;  // misses no way took: read per lookup in forward, read and written in backward
  double state_ms = 0.0;     // element-wise optimizer state, which stays in UVM: every unique row's, read and written
  double rows_read = 0.0;    // weight rows read over the link per step (inserted misses and conflict lookups)
  double row_bytes = 0.0;    // what one such read moves (at least the link's smallest transfer)
  double total_ms() const { return fill_ms + conflict_ms + state_ms; }
};

// One cached piece (shard_as_table's), its cache at `load_factor`, `batch` samples per step (the compute
// model's global batch), the cluster's optimizer and host link.
UvmCacheCost uvm_cache_cost(const Table& piece, double load_factor, int64_t batch, const Cluster& cluster);

// The batch a cost model's compute describes (its measured batch; the scale-free default when unknown).
int64_t cost_model_batch(const CostModel& model);

// Per device: its cached pieces' uvm_cache_cost summed (0 for a device with none).
std::vector<double> devices_cache_ms(const std::vector<DeviceShards>& devices, const Cluster& cluster,
                                     const CostModel& model);

// devices_cache_ms of the plan's devices, or empty when the plan caches no table (costs_from_compute's
// "no cache" is then cache_or_none's null).
std::vector<double> plan_cache_ms(const Plan& plan, const std::vector<DeviceShards>& devices, const CostModel& model);
inline const std::vector<double>* cache_or_none(const std::vector<double>& cache_ms) {
  return cache_ms.empty() ? nullptr : &cache_ms;
}

}  // namespace shardplan
