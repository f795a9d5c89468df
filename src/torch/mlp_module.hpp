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
// shard's alone latency, their sum per device, times a bounded interaction factor from a head.
class ComputeNetImpl : public torch::nn::Module {
 public:
  ComputeNetImpl(int features, const std::vector<int>& shard_widths, const std::vector<int>& head_widths,
                 double interaction_range)
      : shard_net(register_module("shard_net", MlpNet(features, shard_widths, /*relu_last=*/true))),
        alone(register_module("alone", MlpNet(shard_widths.back(), std::vector<int>{1}, /*relu_last=*/false))),
        head(register_module("head", MlpNet(shard_widths.back() + 1, with_output(head_widths), /*relu_last=*/false))),
        interaction_range_(interaction_range) {}

  // x: [shards, features]; device: [shards] device index in [0, devices). Returns [devices] log ms.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& device, int64_t devices) {
    torch::Tensor h = shard_net->forward(x);
    torch::Tensor alone_ms = torch::exp(alone->forward(h).squeeze(1));
    auto options = h.options();
    torch::Tensor sum_ms = torch::zeros({devices}, options).index_add(0, device, alone_ms);
    torch::Tensor count = torch::zeros({devices}, options).index_add(0, device, torch::ones_like(alone_ms));
    torch::Tensor mean_h = torch::zeros({devices, h.size(1)}, options).index_add(0, device, h) / count.unsqueeze(1);
    torch::Tensor logit = head->forward(torch::cat({mean_h, torch::log(count).unsqueeze(1)}, 1)).squeeze(1);
    return torch::log(sum_ms) + interaction_range_ * torch::tanh(logit);
  }

  MlpNet shard_net;
  MlpNet alone;
  MlpNet head;

 private:
  static std::vector<int> with_output(std::vector<int> widths) {
    widths.push_back(1);
    return widths;
  }
  double interaction_range_;
};
TORCH_MODULE(ComputeNet);

}  // namespace shardplan
