#include "shardplan/cost_model/cost_correction.hpp"

#include <cmath>
#include <cstring>

#include "shardplan/core/random.hpp"

namespace shardplan {

namespace {

uint64_t mix(uint64_t hash, uint64_t value) { return derive_seed(hash, value); }

uint64_t bits_of(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Solves (A) x = b in place by Gaussian elimination with partial pivoting; A is n x n, row-major.
std::vector<double> solve(std::vector<double> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r) {
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    }
    if (std::abs(a[pivot * n + col]) < 1e-12) continue;  // a free unknown: stays 0
    if (pivot != col) {
      for (std::size_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
      std::swap(b[col], b[pivot]);
    }
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / a[col * n + col];
      if (f == 0.0) continue;
      for (std::size_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    if (std::abs(a[i * n + i]) < 1e-12) continue;
    double sum = b[i];
    for (std::size_t k = i + 1; k < n; ++k) sum -= a[i * n + k] * x[k];
    x[i] = sum / a[i * n + i];
  }
  return x;
}

class CorrectedCostModel final : public CostModel {
 public:
  CorrectedCostModel(std::shared_ptr<const CostModel> base, CostCorrection correction)
      : base_(std::move(base)), correction_(std::move(correction)) {}

  std::string name() const override { return base_->name() + "+measured"; }
  ModelHardware hardware() const override { return base_->hardware(); }
  int summary_size() const override { return base_->summary_size(); }

  void shard_summary(const ShardFeatures& shard, float* summary) const override {
    base_->shard_summary(shard, summary);
    auto it = correction_.table_scale.find(table_key(shard));
    if (it != correction_.table_scale.end()) base_->scale_shard_summary(summary, it->second);
  }

  double compute_from_summary(const float* summary_sum) const override {
    return correction_.scale * base_->compute_from_summary(summary_sum);
  }

  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override {
    base_->predict_comm(dim_sums, compute_ms, fw_ms, bw_ms);
  }

  void predict_input_dist(const std::vector<double>& ids_per_sample, std::vector<double>& ms) const override {
    base_->predict_input_dist(ids_per_sample, ms);
  }

  double alltoall_group_ms(int num_devices) const override { return base_->alltoall_group_ms(num_devices); }
  double allreduce_ms(double bytes, int num_devices) const override { return base_->allreduce_ms(bytes, num_devices); }
  double rowwise_collectives_ms(int64_t rw_dim, int num_devices) const override {
    return base_->rowwise_collectives_ms(rw_dim, num_devices);
  }

 private:
  std::shared_ptr<const CostModel> base_;
  CostCorrection correction_;
};

}  // namespace

uint64_t table_key(const ShardFeatures& shard) {
  uint64_t hash = mix(0x7461626c65ull, static_cast<uint64_t>(shard.rows));  // "table"
  hash = mix(hash, bits_of(shard.pooling_factor));
  for (double bin : shard.reuse_hist) hash = mix(hash, bits_of(bin));
  return hash;
}

CostCorrection fit_cost_correction(const CostModel& base, const std::vector<CorrectionObservation>& observations,
                                   double ridge) {
  CostCorrection correction;
  // Unknowns: x[0] = log scale, x[1 + t] = log factor of the t-th table met.
  std::map<uint64_t, std::size_t> index;
  struct Row {
    std::vector<std::pair<std::size_t, double>> shares;  // (unknown, share of the set's alone latency)
    double residual = 0.0;                               // log(measured / predicted)
  };
  std::vector<Row> rows;
  const auto width = static_cast<std::size_t>(base.summary_size());
  std::vector<float> summary(width);
  for (const auto& obs : observations) {
    if (obs.shards.empty() || !(obs.measured_ms > 0.0)) continue;
    const double predicted = base.predict_compute({obs.shards}).front();
    if (!(predicted > 0.0)) continue;
    Row row;
    row.residual = std::log(obs.measured_ms / predicted);
    std::map<std::size_t, double> alone;
    double total = 0.0;
    for (const auto& shard : obs.shards) {
      base.shard_summary(shard, summary.data());
      auto [it, added] = index.emplace(table_key(shard), index.size() + 1);
      alone[it->second] += summary[0];
      total += summary[0];
    }
    for (const auto& [unknown, ms] : alone) row.shares.emplace_back(unknown, total > 0 ? ms / total : 0.0);
    rows.push_back(std::move(row));
  }
  correction.observations = static_cast<int>(rows.size());
  if (rows.empty()) return correction;

  const std::size_t n = index.size() + 1;
  std::vector<double> a(n * n, 0.0);
  std::vector<double> b(n, 0.0);
  for (const Row& row : rows) {
    std::vector<std::pair<std::size_t, double>> terms = row.shares;
    terms.emplace_back(0, 1.0);
    for (const auto& [i, wi] : terms) {
      b[i] += wi * row.residual;
      for (const auto& [j, wj] : terms) a[i * n + j] += wi * wj;
    }
  }
  for (std::size_t t = 1; t < n; ++t) a[t * n + t] += ridge;
  std::vector<double> x = solve(std::move(a), std::move(b));
  correction.scale = std::exp(x[0]);
  for (const auto& [key, unknown] : index) correction.table_scale[key] = std::exp(x[unknown]);
  return correction;
}

std::shared_ptr<const CostModel> make_corrected_model(std::shared_ptr<const CostModel> base,
                                                      CostCorrection correction) {
  return std::make_shared<CorrectedCostModel>(std::move(base), std::move(correction));
}

}  // namespace shardplan
