#pragma once
// The cost models' networks as LibTorch modules, and their export to the plain-C++ Mlp used for inference.
#include <torch/torch.h>

#include <vector>

#include "shardplan/neural_cost_model.hpp"

namespace shardplan {

// Linear layers of the given widths with ReLU between them (and after the last when relu_last).
class MlpNetImpl : public torch::nn::Module {
 public:
  MlpNetImpl(int inputs, const std::vector<int>& widths, bool relu_last) : relu_last_(relu_last) {
    int in = inputs;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      layers_.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(in, widths[i])));
      in = widths[i];
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      x = layers_[i]->forward(x);
      if (i + 1 < layers_.size() || relu_last_) x = torch::relu(x);
    }
    return x;
  }

  Mlp to_plain() const {
    Mlp mlp;
    mlp.relu_last = relu_last_;
    for (const auto& layer : layers_) {
      DenseLayer dense;
      torch::Tensor w = layer->weight.detach().to(torch::kFloat32).contiguous();
      torch::Tensor b = layer->bias.detach().to(torch::kFloat32).contiguous();
      dense.outputs = static_cast<int>(w.size(0));
      dense.inputs = static_cast<int>(w.size(1));
      dense.weight.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
      dense.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
      mlp.layers.push_back(std::move(dense));
    }
    return mlp;
  }

 private:
  std::vector<torch::nn::Linear> layers_;
  bool relu_last_;
};
TORCH_MODULE(MlpNet);

// The compute model (ComputeModelSpec in neural_cost_model.hpp): a shared per-shard network, each
// shard's latency alone, their sum per device times a bounded interaction factor from a head, plus a
// learned fixed cost per step (counted once per device, where the sum counts it once per shard).
class ComputeNetImpl : public torch::nn::Module {
 public:
  ComputeNetImpl(int features, const std::vector<int>& shard_widths, const std::vector<int>& head_widths,
                 double interaction_range, bool learn_step_cost = true, bool weighted_context = true)
      : shard_net(register_module("shard_net", MlpNet(features, shard_widths, /*relu_last=*/true))),
        alone(register_module("alone", MlpNet(shard_widths.back(), std::vector<int>{1}, /*relu_last=*/false))),
        head(register_module("head", MlpNet(shard_widths.back() + 1, with_output(head_widths), /*relu_last=*/false))),
        interaction_range_(interaction_range),
        weighted_context_(weighted_context) {
    // Models before the step cost (meta.json without compute.step_cost_ms) load without it.
    if (learn_step_cost) log_step_ms = register_parameter("log_step_ms", torch::full({1}, kInitialLogStepMs));
  }

  // x: [shards, features]; device: [shards] device index in [0, devices). Returns [devices] log ms.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& device, int64_t devices) {
    torch::Tensor h = shard_net->forward(x);
    torch::Tensor alone_ms = torch::exp(alone->forward(h).squeeze(1));
    auto options = h.options();
    torch::Tensor sum_ms = torch::zeros({devices}, options).index_add(0, device, alone_ms);
    torch::Tensor count = torch::zeros({devices}, options).index_add(0, device, torch::ones_like(alone_ms));
    // The head sees the set through its latency-weighted mean embedding, so a set that one heavy shard
    // dominates is judged by that shard, not by the many light ones beside it (with a plain mean, the
    // discount learned for sets of light shards was applied to heavy ones, and the search exploited it).
    torch::Tensor context = weighted_context_
        ? torch::zeros({devices, h.size(1)}, options).index_add(0, device, h * alone_ms.unsqueeze(1)) / sum_ms.unsqueeze(1)
        : torch::zeros({devices, h.size(1)}, options).index_add(0, device, h) / count.unsqueeze(1);
    torch::Tensor logit = head->forward(torch::cat({context, torch::log(count).unsqueeze(1)}, 1)).squeeze(1);
    torch::Tensor device_ms = sum_ms * torch::exp(interaction_range_ * torch::tanh(logit));
    if (log_step_ms.defined()) device_ms = device_ms + torch::exp(log_step_ms);
    return torch::log(device_ms);
  }

  // The step's fixed cost in ms (0 for models without one).
  double step_cost_ms() const { return log_step_ms.defined() ? std::exp(log_step_ms.item<double>()) : 0.0; }

  MlpNet shard_net;
  MlpNet alone;
  MlpNet head;
  torch::Tensor log_step_ms;

 private:
  static std::vector<int> with_output(std::vector<int> widths) {
    widths.push_back(1);
    return widths;
  }
  static constexpr double kInitialLogStepMs = -3.0;  // 0.05 ms, about the fastest measured step
  double interaction_range_;
  bool weighted_context_;
};
TORCH_MODULE(ComputeNet);

}  // namespace shardplan
