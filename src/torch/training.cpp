#include "training.hpp"

#include <algorithm>

#include "shardplan/core/errors.hpp"

namespace shardplan::training {

Split split_indices(std::size_t n, double validation_fraction, double test_fraction, uint64_t seed, uint64_t stream) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(derive_seed(seed, stream));
  rng.shuffle(order);
  auto n_test = static_cast<std::size_t>(std::round(test_fraction * static_cast<double>(n)));
  auto n_val = static_cast<std::size_t>(std::round(validation_fraction * static_cast<double>(n)));
  if (n_test + n_val >= n) throw InputError(fmt::format("{} samples are too few to split for training", n));
  Split split;
  split.test.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_test));
  split.validation.assign(order.begin() + static_cast<std::ptrdiff_t>(n_test),
                          order.begin() + static_cast<std::ptrdiff_t>(n_test + n_val));
  split.train.assign(order.begin() + static_cast<std::ptrdiff_t>(n_test + n_val), order.end());
  return split;
}

ComputeSet compute_set(const std::vector<ComputeSample>& samples, LatencyStatistic latency) {
  ComputeSet set;
  for (const auto& sample : samples) {
    std::vector<ComputeFeatureVector> features;
    for (const auto& shard : sample.shards) features.push_back(compute_features(shard));
    set.shards.push_back(std::move(features));
    set.latency_ms.push_back(latency(sample));
  }
  return set;
}

ComputeBatch compute_batch(const ComputeSet& set, const std::vector<std::size_t>& samples, const Normaliser& norm) {
  std::vector<const ComputeFeatureVector*> rows;
  std::vector<int64_t> device;
  std::vector<float> target;
  for (std::size_t b = 0; b < samples.size(); ++b) {
    for (const auto& f : set.shards[samples[b]]) {
      rows.push_back(&f);
      device.push_back(static_cast<int64_t>(b));
    }
    target.push_back(static_cast<float>(std::log(set.latency_ms[samples[b]])));
  }
  return {normalised_tensor(rows, norm), torch::tensor(device, torch::kInt64), torch::tensor(target),
          static_cast<int64_t>(samples.size())};
}

std::size_t drop_disturbed(std::vector<ComputeSample>& samples, double max_spread) {
  if (max_spread <= 0) return 0;
  auto disturbed = [&](const ComputeSample& s) {
    if (s.iterations_ms.size() < 2) return false;
    auto [lo, hi] = std::minmax_element(s.iterations_ms.begin(), s.iterations_ms.end());
    return (*hi - *lo) > max_spread * s.latency_ms;
  };
  std::size_t before = samples.size();
  samples.erase(std::remove_if(samples.begin(), samples.end(), disturbed), samples.end());
  return before - samples.size();
}

nlohmann::json data_provenance(const nlohmann::json& meta) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"device", "device_model", "cpu_model", "threads", "torch_version", "batch_size", "host",
                          "date", "world_size", "backend"}) {
    if (meta.contains(key)) out[key] = meta[key];
  }
  return out;
}

}  // namespace shardplan::training
