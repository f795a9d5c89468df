// TorchRec's analytic estimate (torchrec-baseline.md), for table-wise and column-wise shards.
#include <algorithm>

#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

namespace {

constexpr double kInputBytesPerId = 8.0;
constexpr double kTableElementBytes = 4.0;  // fp32 weights
constexpr double kAllToAllElementBytes = 4.0;

double width_penalty(int dim) {
  if (dim < 64) return 1.75;
  if (dim < 128) return 1.15;
  return 1.0;
}

double collective_bytes_per_ms(int world_size, const AnalyticCostConfig& config) {
  return world_size <= config.devices_per_host ? config.intra_host_bytes_per_ms : config.inter_host_bytes_per_ms;
}

// batch_size is the global batch (TorchRec's B x W): every sample looks up every table once per bag.
double output_bytes(int64_t cols, const AnalyticCostConfig& config) {
  return static_cast<double>(config.batch_size) * static_cast<double>(cols) * kAllToAllElementBytes;
}

double compute_ms(const ShardFeatures& shard, const AnalyticCostConfig& config) {
  const double lookups = static_cast<double>(config.batch_size) * shard.pooling_factor;
  const double input_read = lookups * kInputBytesPerId;
  const double gathered = lookups * std::max(shard.dim, 32) * kTableElementBytes;
  const double forward = (input_read + gathered + output_bytes(shard.dim, config)) * width_penalty(shard.dim) /
                         config.hbm_bandwidth_bytes_per_ms;
  return 3.0 * forward;  // backward is twice the forward
}

class AnalyticCostModel final : public CostModel {
 public:
  explicit AnalyticCostModel(const AnalyticCostConfig& config) : config_(config) {}
  std::string name() const override { return "analytic-torchrec"; }
  ModelHardware hardware() const override {
    ModelHardware h;
    h.note = "TorchRec's analytic estimate: nominal bandwidths, nothing measured";
    h.compute_batch = config_.batch_size;
    return h;
  }

  // The estimate is additive over shards: the summary is the shard's own cost.
  int summary_size() const override { return 1; }
  double compute_from_summary(const float* summary_sum) const override { return summary_sum[0]; }

  void shard_summary(const ShardFeatures& shard, float* summary) const override {
    summary[0] = static_cast<float>(compute_ms(shard, config_));
  }

  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& /*compute_ms*/,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override {
    const std::size_t n = dim_sums.size();
    const double bandwidth = collective_bytes_per_ms(static_cast<int>(n), config_);
    fw_ms.assign(n, 0.0);
    bw_ms.assign(n, 0.0);
    if (n < 2) return;
    for (std::size_t r = 0; r < n; ++r) {
      fw_ms[r] = output_bytes(dim_sums[r], config_) / bandwidth;
      bw_ms[r] = fw_ms[r];
    }
  }

  double allreduce_ms(double bytes, int num_devices) const override {
    CommFabric fabric;
    fabric.devices_per_host = config_.devices_per_host;
    fabric.intra_bytes_per_ms = config_.intra_host_bytes_per_ms;
    fabric.inter_bytes_per_ms = config_.inter_host_bytes_per_ms;
    return ring_allreduce_ms(fabric, bytes, num_devices);
  }

 private:
  AnalyticCostConfig config_;
};

}  // namespace

AnalyticShardCost analytic_shard_cost(const ShardFeatures& shard, int world_size, const AnalyticCostConfig& config) {
  AnalyticShardCost cost;
  cost.compute_ms = compute_ms(shard, config);
  if (world_size > 1)
    cost.comm_ms = 2.0 * output_bytes(shard.dim, config) / collective_bytes_per_ms(world_size, config);
  return cost;
}

std::unique_ptr<CostModel> make_analytic_cost_model(const AnalyticCostConfig& config) {
  return std::make_unique<AnalyticCostModel>(config);
}

}  // namespace shardplan
