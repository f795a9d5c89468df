#include "shardplan/cost_model/uvm_cache_cost.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "shardplan/core/uvm_cache.hpp"
#include "shardplan/cost_model/neural_cost_model.hpp"

namespace shardplan {

namespace {

constexpr double kBytesPerMsPerGBps = 1e6;  // 1 GB/s moves 1e6 bytes per ms
constexpr double kStateBytes = 4.0;         // fp32 optimizer state
// Measured on an H100's PCIe Gen5 x16 link (data/measured/h100/uvm-link): a random row of managed memory
// costs at least a 128-byte transfer (64-byte rows moved at 24.5 GB/s, 128-byte ones at 44-47 GB/s), and
// reads and writes at once reached 1.35 times one direction's rate (64 GB/s against 47), not twice it.
constexpr double kMinRowTransferBytes = 128.0;
constexpr double kDuplexFactor = 1.35;

// The link's time for `read` bytes host-to-GPU and `written` bytes GPU-to-host in one step.
double link_ms(double read, double written, double bytes_per_ms) {
  return std::max({read, written, (read + written) / kDuplexFactor}) / bytes_per_ms;
}

// Element-wise optimizer state per element, which FBGEMM keeps in UVM and never caches.
double uvm_state_elements(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kAdagrad:
      return 1.0;
    case Optimizer::kAdam:
      return 2.0;
    case Optimizer::kSgd:
    case Optimizer::kRowwiseAdagrad:
      return 0.0;
  }
  return 0.0;
}

}  // namespace

UvmCacheCost uvm_cache_cost(const Table& piece, double load_factor, int64_t batch, const Cluster& cluster) {
  UvmCacheCost cost;
  cost.misses = estimate_lru_misses(piece, batch, uvm_cache_slots(piece.rows, load_factor));
  const double link = cluster.host_link_gb_per_s * kBytesPerMsPerGBps;
  if (!(link > 0.0)) return cost;
  const double row_bytes = std::max(kMinRowTransferBytes, static_cast<double>(piece.dim) * dtype_bytes(piece.dtype));
  cost.row_bytes = row_bytes;
  const double lookups = std::round(static_cast<double>(batch) * piece.pooling_factor);
  const CacheMissEstimate& m = cost.misses;
  // Each inserted row is read once and, the cache being full, evicts a row FBGEMM writes back (it keeps no
  // dirty bit).
  const double inserted = std::max(0.0, m.unique_misses - m.conflict_unique);
  cost.fill_ms = link_ms(inserted * row_bytes, inserted * row_bytes, link);
  // A conflicting row is read by each of its lookups in forward (N / D per unique row on average), and read
  // and written once by backward's fused update.
  const double conflict_reads = m.distinct > 0 ? m.conflict_unique * (lookups / m.distinct + 1.0) : 0.0;
  cost.conflict_ms = link_ms(conflict_reads * row_bytes, m.conflict_unique * row_bytes, link);
  cost.rows_read = inserted + conflict_reads;
  // Element-wise state stays in UVM: every unique row's is read and written by the update.
  const double state_bytes = std::max(
      kMinRowTransferBytes, static_cast<double>(piece.dim) * kStateBytes * uvm_state_elements(cluster.optimizer));
  if (uvm_state_elements(cluster.optimizer) > 0.0)
    cost.state_ms = link_ms(m.distinct * state_bytes, m.distinct * state_bytes, link);
  return cost;
}

int64_t cost_model_batch(const CostModel& model) {
  const int64_t batch = model.hardware().compute_batch;
  return batch > 0 ? batch : kScaleFreeCommBatch;
}

std::vector<double> devices_cache_ms(const std::vector<DeviceShards>& devices, const Cluster& cluster,
                                     const CostModel& model) {
  std::vector<double> ms(devices.size(), 0.0);
  const int64_t batch = cost_model_batch(model);
  // A row-wise table's blocks are alike but the last: each (table, rows, load factor) is estimated once.
  std::map<std::tuple<std::size_t, int64_t, double>, double> known;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    const DeviceShards& device = devices[r];
    for (std::size_t p = 0; p < device.pieces.size(); ++p) {
      if (p >= device.load_factors.size() || device.load_factors[p] <= 0.0) continue;
      const auto key = std::make_tuple(device.plan_tables[p], device.pieces[p].rows, device.load_factors[p]);
      auto at = known.find(key);
      if (at == known.end()) {
        const double cost = uvm_cache_cost(device.pieces[p], device.load_factors[p], batch, cluster).total_ms();
        at = known.emplace(key, cost).first;
      }
      ms[r] += at->second;
    }
  }
  return ms;
}

std::vector<double> plan_cache_ms(const Plan& plan, const std::vector<DeviceShards>& devices, const CostModel& model) {
  return has_cached_tables(plan) ? devices_cache_ms(devices, plan.cluster, model) : std::vector<double>{};
}

}  // namespace shardplan
