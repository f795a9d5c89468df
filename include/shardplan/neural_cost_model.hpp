#pragma once
// The pre-trained neural cost model evaluated in plain C++: its weights come from a model directory
// (read with LibTorch by load_cost_model in cost_model_io.hpp), but inference needs no LibTorch, so the
// search scores thousands of shard sets a second without tensor overheads.
#include <memory>
#include <string>
#include <vector>

#include "shardplan/cost_model.hpp"

namespace shardplan {

// Widest layer the evaluator handles (it works in fixed buffers); model files with wider layers are refused.
inline constexpr int kMaxLayerWidth = 512;

// A fully connected layer: y = W x + b, W stored row-major [out][in].
struct DenseLayer {
  int inputs = 0;
  int outputs = 0;
  std::vector<float> weight;
  std::vector<float> bias;
};

// Dense layers with ReLU between them (and after the last one when relu_last).
struct Mlp {
  std::vector<DenseLayer> layers;
  bool relu_last = false;
  int inputs() const { return layers.empty() ? 0 : layers.front().inputs; }
  int outputs() const { return layers.empty() ? 0 : layers.back().outputs; }
  // `x` has inputs() values, `y` receives outputs() values.
  void forward(const float* x, float* y) const;
};

// Standardisation of inputs and targets with the training set's statistics.
struct Normaliser {
  std::vector<float> mean;
  std::vector<float> std;
};

struct ComputeModelSpec {
  Normaliser features;   // kComputeFeatures
  Mlp shard_net;         // features -> embedding (ReLU last), summed over the device's shards
  Mlp head;              // summed embedding -> standardised log latency
  float target_mean = 0.0f;  // of log(ms)
  float target_std = 1.0f;
};

struct CommModelSpec {
  Normaliser features;   // kCommFeatures
  Mlp net;               // per device: features -> standardised log1p(fw ms), log1p(bw ms)
  std::array<float, 2> target_mean{};
  std::array<float, 2> target_std{1.0f, 1.0f};
};

class NeuralCostModel final : public CostModel {
 public:
  NeuralCostModel(std::string name, ComputeModelSpec compute, CommModelSpec comm);
  std::string name() const override { return name_; }
  std::vector<double> predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const override;
  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override;

  // The two halves of predict_compute, for callers that cache per-shard work (the search):
  // a shard's embedding, and the latency of a device whose embeddings sum to `embedding_sum`.
  int embedding_size() const { return compute_.shard_net.outputs(); }
  void shard_embedding(const ShardFeatures& shard, float* embedding) const;
  double latency_from_embedding_sum(const float* embedding_sum) const;

 private:
  std::string name_;
  ComputeModelSpec compute_;
  CommModelSpec comm_;
};

}  // namespace shardplan
