#pragma once
// The cost models' networks as LibTorch modules, and their export to the plain-C++ Mlp used for inference.
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "shardplan/cost_model/neural_cost_model.hpp"

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

// One hidden layer, non-decreasing in its first `monotone` inputs. Hidden units are of three kinds:
// `bends` convex ones (ReLU) and `bends` concave ones (min(x, 0)) see every input, the monotone ones
// through positive weights (softplus of free parameters), and pass on through positive output weights;
// `free` units (ReLU) see only the other inputs and are weighted freely. The sum of positive multiples
// of convex and concave non-decreasing pieces can take any non-decreasing shape in the monotone inputs,
// and the free units any shape in the context. The hierarchical comm model uses it so that more bytes
// never cost less.
class MonotoneNetImpl : public torch::nn::Module {
 public:
  MonotoneNetImpl(int inputs, int monotone, int bends, int free, int outputs)
      : inputs_(inputs), bends_(bends), hidden_(2 * bends + free) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(inputs));
    raw0 = register_parameter("raw0", torch::empty({hidden_, inputs}).uniform_(-bound, bound));
    b0 = register_parameter("b0", torch::empty({hidden_}).uniform_(-bound, bound));
    // Small positive output weights to start: softplus(-3) is about 0.05.
    raw1 = register_parameter("raw1", torch::empty({outputs, hidden_}).uniform_(-3.5, -2.5));
    b1 = register_parameter("b1", torch::zeros({outputs}));
    const int64_t dependent = 2 * bends;
    positive_in = torch::zeros({hidden_, inputs});
    positive_in.index_put_({torch::indexing::Slice(0, dependent), torch::indexing::Slice(0, monotone)}, 1.0);
    cut_in = torch::ones({hidden_, inputs});
    cut_in.index_put_({torch::indexing::Slice(dependent, torch::indexing::None), torch::indexing::Slice(0, monotone)},
                      0.0);
    positive_out = torch::zeros({1, hidden_});
    positive_out.index_put_({0, torch::indexing::Slice(0, dependent)}, 1.0);
  }

  torch::Tensor first_weight() const {
    return (raw0 * (1 - positive_in) + torch::softplus(raw0) * positive_in) * cut_in;
  }
  torch::Tensor output_weight() const { return raw1 * (1 - positive_out) + torch::softplus(raw1) * positive_out; }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor pre = torch::nn::functional::linear(x, first_weight(), b0);
    using torch::indexing::Slice;
    torch::Tensor h = torch::cat({torch::relu(pre.index({Slice(), Slice(0, bends_)})),
                                  torch::clamp_max(pre.index({Slice(), Slice(bends_, 2 * bends_)}), 0.0),
                                  torch::relu(pre.index({Slice(), Slice(2 * bends_, torch::indexing::None)}))},
                                 1);
    return torch::nn::functional::linear(h, output_weight(), b1);
  }

  // The same network as plain layers (what a model directory stores); its concave units are
  // [concave_begin(), concave_end()) of the hidden layer.
  MlpNet exported() const {
    MlpNet net(inputs_, std::vector<int>{hidden_, static_cast<int>(raw1.size(0))}, /*relu_last=*/false);
    torch::NoGradGuard no_grad;
    auto params = net->named_parameters();
    params["l0.weight"].copy_(first_weight());
    params["l0.bias"].copy_(b0);
    params["l1.weight"].copy_(output_weight());
    params["l1.bias"].copy_(b1);
    return net;
  }
  int concave_begin() const { return bends_; }
  int concave_end() const { return 2 * bends_; }

  torch::Tensor raw0, b0, raw1, b1;

 private:
  torch::Tensor positive_in, cut_in, positive_out;
  int inputs_;
  int bends_;
  int hidden_;
};
TORCH_MODULE(MonotoneNet);

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
    torch::Tensor context =
        weighted_context_
            ? torch::zeros({devices, h.size(1)}, options).index_add(0, device, h * alone_ms.unsqueeze(1)) /
                  sum_ms.unsqueeze(1)
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
