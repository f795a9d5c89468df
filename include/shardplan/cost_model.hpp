#pragma once
// What the planner asks of a cost model: the compute latency of a device's shard set (not additive over
// shards: fused kernels share launches and caches), and each device's all-to-all latency given every
// device's output width and compute time. Implementations: the pre-trained neural model (load_cost_model
// in cost_model_io.hpp) and TorchRec's analytic estimate. No LibTorch types here.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardplan/costs/cost_data.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;

  // Compute latency in ms of each shard set (one device's shards each); batched so a search can hand
  // over all its candidates at once. An empty set costs 0.
  virtual std::vector<double> predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const = 0;

  // Per-device forward and backward all-to-all latency in ms, given each device's output width (sum of
  // its shards' columns) and predicted compute (a device that finishes early waits in the forward
  // collective).
  virtual void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                            std::vector<double>& fw_ms, std::vector<double>& bw_ms) const = 0;
};

// The features of a shard: `cols` columns of `table` (all rows).
ShardFeatures shard_features(const Table& table, int64_t cols);

// Scores a plan: per-device compute, forward and backward communication.
std::vector<DeviceCost> score_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model);

// TorchRec's analytic estimate (torchrec-baseline.md) for `batch_size` samples per rank.
struct AnalyticCostConfig {
  int64_t batch_size = 2048;
  int devices_per_host = 8;
  double hbm_bandwidth_bytes_per_ms = 897.0 * (1ll << 30) / 1000.0;  // fused kernel, 897 GiB/s
  double intra_host_bytes_per_ms = 600.0 * (1ll << 30) / 1000.0;
  double inter_host_bytes_per_ms = 12.5 * (1ll << 30) / 1000.0;
};
std::unique_ptr<CostModel> make_analytic_cost_model(const AnalyticCostConfig& config);

}  // namespace shardplan
