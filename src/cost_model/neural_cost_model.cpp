#include "shardplan/neural_cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/cost_features.hpp"

namespace shardplan {

void Mlp::forward(const float* x, float* y) const {
  float a[kMaxLayerWidth];
  float b[kMaxLayerWidth];
  const float* in = x;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const DenseLayer& layer = layers[l];
    bool last = l + 1 == layers.size();
    float* out = last ? y : (l % 2 == 0 ? a : b);
    for (int o = 0; o < layer.outputs; ++o) {
      const float* w = layer.weight.data() + static_cast<std::size_t>(o) * static_cast<std::size_t>(layer.inputs);
      float sum = layer.bias[static_cast<std::size_t>(o)];
      for (int i = 0; i < layer.inputs; ++i) sum += w[i] * in[i];
      out[o] = (!last || relu_last) ? std::max(sum, 0.0f) : sum;
    }
    in = out;
  }
}

NeuralCostModel::NeuralCostModel(std::string name, ComputeModelSpec compute, CommModelSpec comm)
    : name_(std::move(name)), compute_(std::move(compute)), comm_(std::move(comm)) {}

void NeuralCostModel::shard_embedding(const ShardFeatures& shard, float* embedding) const {
  ComputeFeatureVector f = compute_features(shard);
  for (int i = 0; i < kComputeFeatures; ++i) {
    auto k = static_cast<std::size_t>(i);
    f[k] = (f[k] - compute_.features.mean[k]) / compute_.features.std[k];
  }
  compute_.shard_net.forward(f.data(), embedding);
}

double NeuralCostModel::latency_from_embedding_sum(const float* embedding_sum) const {
  float out = 0.0f;
  compute_.head.forward(embedding_sum, &out);
  return std::exp(static_cast<double>(out * compute_.target_std + compute_.target_mean));
}

std::vector<double> NeuralCostModel::predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const {
  std::vector<double> out(sets.size(), 0.0);
  const auto width = static_cast<std::size_t>(embedding_size());
  std::vector<float> sum(width);
  std::vector<float> embedding(width);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    if (sets[s].empty()) continue;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (const auto& shard : sets[s]) {
      shard_embedding(shard, embedding.data());
      for (std::size_t i = 0; i < width; ++i) sum[i] += embedding[i];
    }
    out[s] = latency_from_embedding_sum(sum.data());
  }
  return out;
}

void NeuralCostModel::predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                                   std::vector<double>& fw_ms, std::vector<double>& bw_ms) const {
  const std::size_t n = dim_sums.size();
  fw_ms.assign(n, 0.0);
  bw_ms.assign(n, 0.0);
  if (n < 2) return;  // one device exchanges nothing
  // A device starts the collective when its compute ends: its delay relative to the earliest device.
  double earliest = *std::min_element(compute_ms.begin(), compute_ms.end());
  std::vector<double> delays(n);
  for (std::size_t r = 0; r < n; ++r) delays[r] = compute_ms[r] - earliest;
  std::vector<CommFeatureVector> features = comm_features(dim_sums, delays);
  for (std::size_t r = 0; r < n; ++r) {
    CommFeatureVector& f = features[r];
    for (int i = 0; i < kCommFeatures; ++i) {
      auto k = static_cast<std::size_t>(i);
      f[k] = (f[k] - comm_.features.mean[k]) / comm_.features.std[k];
    }
    float out[2];
    comm_.net.forward(f.data(), out);
    fw_ms[r] = std::max(0.0, std::expm1(static_cast<double>(out[0] * comm_.target_std[0] + comm_.target_mean[0])));
    bw_ms[r] = std::max(0.0, std::expm1(static_cast<double>(out[1] * comm_.target_std[1] + comm_.target_mean[1])));
  }
}

}  // namespace shardplan
