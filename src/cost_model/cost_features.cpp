#include "shardplan/cost_model/cost_features.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shardplan {

ComputeFeatureVector compute_features(const ShardFeatures& shard) {
  ComputeFeatureVector f{};
  const double rows = static_cast<double>(shard.rows);
  const double dim = static_cast<double>(shard.dim);
  f[0] = static_cast<float>(std::log(rows));
  f[1] = static_cast<float>(dim);
  f[2] = static_cast<float>(std::log1p(shard.pooling_factor));
  f[3] = static_cast<float>(std::log1p(shard.pooling_factor * dim));
  f[4] = static_cast<float>(std::log(rows * dim));
  double hot = 0.0;
  for (int b = 0; b < kReuseBins; ++b) {
    f[static_cast<std::size_t>(5 + b)] = static_cast<float>(shard.reuse_hist[static_cast<std::size_t>(b)]);
    if (b >= 7) hot += shard.reuse_hist[static_cast<std::size_t>(b)];
  }
  f[5 + kReuseBins] = static_cast<float>(hot);
  return f;
}

std::vector<double> comm_waits(const std::vector<double>& delays_ms) {
  std::vector<double> waits(delays_ms.size(), 0.0);
  if (delays_ms.empty()) return waits;
  const double latest = *std::max_element(delays_ms.begin(), delays_ms.end());
  for (std::size_t r = 0; r < delays_ms.size(); ++r) waits[r] = latest - delays_ms[r];
  return waits;
}

std::vector<CommFeatureVector> comm_features(const std::vector<int64_t>& dim_sums,
                                             const std::vector<double>& delays_ms) {
  std::vector<CommFeatureVector> out;
  comm_features_into(dim_sums, delays_ms, out);
  return out;
}

void comm_features_into(const std::vector<int64_t>& dim_sums, const std::vector<double>& delays_ms,
                        std::vector<CommFeatureVector>& out) {
  const std::size_t n = dim_sums.size();
  out.resize(n);
  if (n == 0) return;
  const double mean_width = std::accumulate(dim_sums.begin(), dim_sums.end(), 0.0) / static_cast<double>(n);
  const double max_width = static_cast<double>(*std::max_element(dim_sums.begin(), dim_sums.end()));
  const double earliest = *std::min_element(delays_ms.begin(), delays_ms.end());
  const double max_delay = *std::max_element(delays_ms.begin(), delays_ms.end()) - earliest;
  const double mean_delay =
      std::accumulate(delays_ms.begin(), delays_ms.end(), 0.0) / static_cast<double>(n) - earliest;
  // What every device shares, computed once (the search evaluates this for every candidate change).
  const auto log_mean_width = static_cast<float>(std::log1p(mean_width));
  const auto log_max_width = static_cast<float>(std::log1p(max_width));
  const auto log_devices = static_cast<float>(std::log(static_cast<double>(n)));
  const auto log_max_delay = static_cast<float>(std::log1p(max_delay));
  const auto log_mean_delay = static_cast<float>(std::log1p(mean_delay));
  for (std::size_t r = 0; r < n; ++r) {
    const double width = static_cast<double>(dim_sums[r]);
    const double wait = max_delay - (delays_ms[r] - earliest);
    out[r] = {static_cast<float>(std::log1p(width)),
              log_mean_width,
              log_max_width,
              static_cast<float>(mean_width > 0 ? width / mean_width : 1.0),
              static_cast<float>(max_width > 0 ? width / max_width : 1.0),
              log_devices,
              static_cast<float>(std::log1p(wait)),
              log_max_delay,
              log_mean_delay};
  }
}

void hierarchical_comm_features_into(const CommFabric& fabric, const std::vector<int64_t>& dim_sums,
                                     const std::vector<double>& delays_ms, std::vector<HierCommFeatureVector>& out,
                                     std::vector<double>& structure_ms) {
  const std::size_t n = dim_sums.size();
  out.resize(n);
  structure_ms.resize(n);
  if (n == 0) return;
  thread_local std::vector<AllToAllTimes> times;
  hierarchical_alltoall_times(fabric, dim_sums, times);
  const double earliest = *std::min_element(delays_ms.begin(), delays_ms.end());
  const double max_delay = *std::max_element(delays_ms.begin(), delays_ms.end()) - earliest;
  const double mean_delay =
      std::accumulate(delays_ms.begin(), delays_ms.end(), 0.0) / static_cast<double>(n) - earliest;
  const auto log_max_delay = static_cast<float>(std::log1p(max_delay));
  const auto log_mean_delay = static_cast<float>(std::log1p(mean_delay));
  const auto per_host = static_cast<std::size_t>(std::max(1, fabric.devices_per_host));
  auto log_time = [](double ms) { return static_cast<float>(std::log(std::max(ms, kMinStructureMs))); };
  for (std::size_t r = 0; r < n; ++r) {
    const AllToAllTimes& t = times[r];
    structure_ms[r] = std::max(t.total, kMinStructureMs);
    const std::size_t host_start = r / per_host * per_host;
    const double local = static_cast<double>(std::min(n, host_start + per_host) - host_start);
    const double remote_share = n > 1 ? (static_cast<double>(n) - local) / static_cast<double>(n - 1) : 0.0;
    const double wait = max_delay - (delays_ms[r] - earliest);
    out[r] = {log_time(t.total),
              log_time(t.out),
              log_time(t.in),
              log_time(t.host),
              log_time(t.latency),
              static_cast<float>(remote_share),
              static_cast<float>(std::log1p(wait)),
              log_max_delay,
              log_mean_delay};
  }
}

void clear_start_delays(HierCommFeatureVector& features) {
  // Own wait, max delay, mean delay: each log1p of 0 ms.
  for (std::size_t k = kFirstStartDelayFeature; k < features.size(); ++k) features[k] = 0.0f;
}

}  // namespace shardplan
