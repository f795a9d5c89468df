// TorchRec's analytic estimate (torchrec-baseline.md), for table-wise and column-wise shards.
#include <algorithm>

#include "shardplan/cost_model.hpp"

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

class AnalyticCostModel final : public CostModel {
 public:
  explicit AnalyticCostModel(const AnalyticCostConfig& config) : config_(config) {}
  std::string name() const override { return "analytic-torchrec"; }

  // batch_size is the global batch (TorchRec's B x W): every sample looks up every table once per bag.
  std::vector<double> predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const override {
    const double batch = static_cast<double>(config_.batch_size);
    std::vector<double> out;
    out.reserve(sets.size());
    for (const auto& set : sets) {
      double total = 0.0;
      for (const auto& shard : set) {
        double lookups = batch * shard.pooling_factor;
        double input_read = lookups * kInputBytesPerId;
        double gathered = lookups * std::max(shard.dim, 32) * kTableElementBytes;
        double output_write = batch * shard.dim * kAllToAllElementBytes;
        double forward = (input_read + gathered + output_write) * width_penalty(shard.dim) /
                         config_.hbm_bandwidth_bytes_per_ms;
        total += 3.0 * forward;  // backward is twice the forward
      }
      out.push_back(total);
    }
    return out;
  }

  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& /*compute_ms*/,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override {
    const std::size_t n = dim_sums.size();
    double bandwidth = static_cast<int>(n) <= config_.devices_per_host ? config_.intra_host_bytes_per_ms
                                                                       : config_.inter_host_bytes_per_ms;
    fw_ms.assign(n, 0.0);
    bw_ms.assign(n, 0.0);
    if (n < 2) return;
    for (std::size_t r = 0; r < n; ++r) {
      double output = static_cast<double>(config_.batch_size) * static_cast<double>(dim_sums[r]) * kAllToAllElementBytes;
      fw_ms[r] = output / bandwidth;
      bw_ms[r] = fw_ms[r];
    }
  }

 private:
  AnalyticCostConfig config_;
};

}  // namespace

std::unique_ptr<CostModel> make_analytic_cost_model(const AnalyticCostConfig& config) {
  return std::make_unique<AnalyticCostModel>(config);
}

}  // namespace shardplan
