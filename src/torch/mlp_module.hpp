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

// The compute model: a shared per-shard network, a sum over each device's shards, a head.
class ComputeNetImpl : public torch::nn::Module {
 public:
  ComputeNetImpl(int features, const std::vector<int>& shard_widths, const std::vector<int>& head_widths)
      : shard_net(register_module("shard_net", MlpNet(features, shard_widths, /*relu_last=*/true))),
        head(register_module("head", MlpNet(shard_widths.back(), with_output(head_widths), /*relu_last=*/false))) {}

  // x: [shards, features]; device: [shards] device index in [0, devices). Returns [devices].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& device, int64_t devices) {
    torch::Tensor per_shard = shard_net->forward(x);
    torch::Tensor summed = torch::zeros({devices, per_shard.size(1)}, per_shard.options()).index_add(0, device, per_shard);
    return head->forward(summed).squeeze(1);
  }

  MlpNet shard_net;
  MlpNet head;

 private:
  static std::vector<int> with_output(std::vector<int> widths) {
    widths.push_back(1);
    return widths;
  }
};
TORCH_MODULE(ComputeNet);

}  // namespace shardplan
