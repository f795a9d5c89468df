#include "shardplan/cost_model/neural_cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/cost_model/cost_features.hpp"

namespace shardplan {

namespace {
constexpr int kTabulatedLogCounts = 4096;
}  // namespace

void Mlp::prepare() {
  for (DenseLayer& layer : layers) {
    const auto ins = static_cast<std::size_t>(layer.inputs);
    const auto outs = static_cast<std::size_t>(layer.outputs);
    layer.weight_by_input.resize(ins * outs);
    for (std::size_t o = 0; o < outs; ++o) {
      for (std::size_t i = 0; i < ins; ++i) layer.weight_by_input[i * outs + o] = layer.weight[o * ins + i];
    }
  }
}

namespace {

// Whether a layer takes the wide path: 8 or more outputs, with its weight_by_input built.
inline bool is_wide(const DenseLayer& layer) {
  return layer.outputs >= 8 && layer.weight_by_input.size() == static_cast<std::size_t>(layer.inputs * layer.outputs);
}

// A wide layer's per-output sums `init` (may be `out`) plus inputs [from, to), in ascending order, into
// `out`; zero inputs (ReLU outputs, mostly) add nothing and are skipped. Eight outputs at a time in a
// local accumulator, which stays in a register across the inputs.
inline void add_wide_inputs(const DenseLayer& layer, const float* in, std::size_t from, std::size_t to,
                            const float* init, float* out) {
  const auto outs = static_cast<std::size_t>(layer.outputs);
  std::size_t o0 = 0;
  for (; o0 + 8 <= outs; o0 += 8) {
    float block[8];
    for (std::size_t k = 0; k < 8; ++k) block[k] = init[o0 + k];
    for (std::size_t i = from; i < to; ++i) {
      const float v = in[i];
      if (v == 0.0f) continue;
      const float* w = layer.weight_by_input.data() + i * outs + o0;
      for (std::size_t k = 0; k < 8; ++k) block[k] += w[k] * v;
    }
    for (std::size_t k = 0; k < 8; ++k) out[o0 + k] = block[k];
  }
  for (std::size_t o = o0; o < outs; ++o) {
    float sum = init[o];
    for (std::size_t i = from; i < to; ++i) {
      const float v = in[i];
      if (v == 0.0f) continue;
      sum += layer.weight_by_input[i * outs + o] * v;
    }
    out[o] = sum;
  }
}

// A wide layer: each output starts at its bias and adds the inputs.
inline void wide_layer(const DenseLayer& layer, const float* in, float* out) {
  add_wide_inputs(layer, in, 0, static_cast<std::size_t>(layer.inputs), layer.bias.data(), out);
}

// A layer of few outputs over m samples, each output of each sample the same chain of additions as in
// Mlp::forward. Four samples by two outputs at a time: eight independent chains kept in registers, where
// one chain per output through memory made the comm net's last layer the search's hottest loop.
inline void narrow_layer_batch(const DenseLayer& layer, const float* in, std::size_t in_stride, std::size_t m,
                               float* out, std::size_t out_stride) {
  const auto outs = static_cast<std::size_t>(layer.outputs);
  const auto ins = static_cast<std::size_t>(layer.inputs);
  std::size_t s = 0;
  for (; s + 4 <= m; s += 4) {
    const float* x0 = in + s * in_stride;
    const float* x1 = x0 + in_stride;
    const float* x2 = x1 + in_stride;
    const float* x3 = x2 + in_stride;
    std::size_t o = 0;
    for (; o + 2 <= outs; o += 2) {
      const float* w0 = layer.weight.data() + o * ins;
      const float* w1 = w0 + ins;
      float a0 = layer.bias[o], a1 = a0, a2 = a0, a3 = a0;
      float b0 = layer.bias[o + 1], b1 = b0, b2 = b0, b3 = b0;
      for (std::size_t i = 0; i < ins; ++i) {
        a0 += w0[i] * x0[i];
        a1 += w0[i] * x1[i];
        a2 += w0[i] * x2[i];
        a3 += w0[i] * x3[i];
        b0 += w1[i] * x0[i];
        b1 += w1[i] * x1[i];
        b2 += w1[i] * x2[i];
        b3 += w1[i] * x3[i];
      }
      float* y = out + s * out_stride + o;
      y[0] = a0;
      y[1] = b0;
      y[out_stride] = a1;
      y[out_stride + 1] = b1;
      y[2 * out_stride] = a2;
      y[2 * out_stride + 1] = b2;
      y[3 * out_stride] = a3;
      y[3 * out_stride + 1] = b3;
    }
    for (; o < outs; ++o) {
      const float* w = layer.weight.data() + o * ins;
      float a0 = layer.bias[o], a1 = a0, a2 = a0, a3 = a0;
      for (std::size_t i = 0; i < ins; ++i) {
        a0 += w[i] * x0[i];
        a1 += w[i] * x1[i];
        a2 += w[i] * x2[i];
        a3 += w[i] * x3[i];
      }
      out[s * out_stride + o] = a0;
      out[(s + 1) * out_stride + o] = a1;
      out[(s + 2) * out_stride + o] = a2;
      out[(s + 3) * out_stride + o] = a3;
    }
  }
  for (; s < m; ++s) {
    const float* x = in + s * in_stride;
    for (std::size_t o = 0; o < outs; ++o) {
      const float* w = layer.weight.data() + o * ins;
      float sum = layer.bias[o];
      for (std::size_t i = 0; i < ins; ++i) sum += w[i] * x[i];
      out[s * out_stride + o] = sum;
    }
  }
}

// ReLU, or min(x, 0) for the layer's concave outputs (DenseLayer::concave_begin).
inline void activate(const DenseLayer& layer, float* out) {
  const auto outs = static_cast<std::size_t>(layer.outputs);
  const auto cb = static_cast<std::size_t>(layer.concave_begin);
  const auto ce = static_cast<std::size_t>(layer.concave_end);
  if (ce <= cb) {
    for (std::size_t o = 0; o < outs; ++o) out[o] = std::max(out[o], 0.0f);
    return;
  }
  for (std::size_t o = 0; o < outs; ++o) out[o] = o >= cb && o < ce ? std::min(out[o], 0.0f) : std::max(out[o], 0.0f);
}

// One layer over m samples (rows `in_stride` and `out_stride` apart), then its activation when asked.
// Always inlined, so that it is built for AVX2 within its callers' AVX2 clones.
[[gnu::always_inline]] inline void layer_batch(const DenseLayer& layer, const float* in, std::size_t in_stride,
                                               std::size_t m, float* out, std::size_t out_stride, bool activated) {
  if (is_wide(layer)) {
    for (std::size_t s = 0; s < m; ++s) wide_layer(layer, in + s * in_stride, out + s * out_stride);  // as forward()
  } else {
    narrow_layer_batch(layer, in, in_stride, m, out, out_stride);
  }
  if (activated) {
    for (std::size_t s = 0; s < m; ++s) activate(layer, out + s * out_stride);
  }
}

}  // namespace

// Built for AVX2 machines too (picked at load time): the per-output sums keep their order, so results
// are the same bit for bit, only more outputs are summed at once. Most of a search's time is here.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void Mlp::forward(const float* x, float* y) const {
  float a[kMaxLayerWidth];
  float b[kMaxLayerWidth];
  const float* in = x;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const DenseLayer& layer = layers[l];
    bool last = l + 1 == layers.size();
    float* out = last ? y : (l % 2 == 0 ? a : b);
    const auto outs = static_cast<std::size_t>(layer.outputs);
    const auto ins = static_cast<std::size_t>(layer.inputs);
    if (is_wide(layer)) {
      wide_layer(layer, in, out);  // narrow layers are plain dot products (below), in the same order
    } else {
      // Two outputs at a time: two independent chains of additions, each in the order above.
      std::size_t o = 0;
      for (; o + 1 < outs; o += 2) {
        const float* w0 = layer.weight.data() + o * ins;
        const float* w1 = w0 + ins;
        float sum0 = layer.bias[o];
        float sum1 = layer.bias[o + 1];
        for (std::size_t i = 0; i < ins; ++i) {
          sum0 += w0[i] * in[i];
          sum1 += w1[i] * in[i];
        }
        out[o] = sum0;
        out[o + 1] = sum1;
      }
      for (; o < outs; ++o) {
        const float* w = layer.weight.data() + o * ins;
        float sum = layer.bias[o];
        for (std::size_t i = 0; i < ins; ++i) sum += w[i] * in[i];
        out[o] = sum;
      }
    }
    if (!last || relu_last) activate(layer, out);
    in = out;
  }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void Mlp::forward_batch(const float* x, std::size_t n, float* y) const {
  constexpr std::size_t kBlock = 8;
  static thread_local std::vector<float> buffers(2 * kBlock * kMaxLayerWidth);
  float* a = buffers.data();
  float* b = a + kBlock * kMaxLayerWidth;
  const auto n_in = static_cast<std::size_t>(inputs());
  const auto n_out = static_cast<std::size_t>(outputs());
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t m = std::min(kBlock, n - start);
    const float* in = x + start * n_in;
    std::size_t in_stride = n_in;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const DenseLayer& layer = layers[l];
      const bool last = l + 1 == layers.size();
      float* out = last ? y + start * n_out : (l % 2 == 0 ? a : b);
      const std::size_t out_stride = last ? n_out : kMaxLayerWidth;
      layer_batch(layer, in, in_stride, m, out, out_stride, !last || relu_last);
      in = out;
      in_stride = out_stride;
    }
  }
}

NeuralCostModel::NeuralCostModel(std::string name, ComputeModelSpec compute, CommModelSpec comm)
    : name_(std::move(name)), compute_(std::move(compute)), comm_(std::move(comm)) {
  compute_.shard_net.prepare();
  compute_.alone.prepare();
  compute_.head.prepare();
  comm_.net.prepare();
  const DenseLayer& first = compute_.head.layers.front();
  const auto width = static_cast<std::size_t>(compute_.shard_net.outputs());
  for (std::size_t o = 0; o < static_cast<std::size_t>(first.outputs); ++o) {
    const float* row = first.weight.data() + o * (width + 1);
    projection_.insert(projection_.end(), row, row + width);
    count_weight_.push_back(row[width]);
  }
  for (int n = 0; n < kTabulatedLogCounts; ++n) log_counts_.push_back(std::log(static_cast<float>(n)));
  head_rest_.layers.assign(compute_.head.layers.begin() + 1, compute_.head.layers.end());
  head_rest_.relu_last = compute_.head.relu_last;
  head_rest_.prepare();
}

void NeuralCostModel::shard_summary(const ShardFeatures& shard, float* summary) const {
  ComputeFeatureVector f = compute_features(shard);
  for (int i = 0; i < kComputeFeatures; ++i) {
    auto k = static_cast<std::size_t>(i);
    f[k] = (f[k] - compute_.features.mean[k]) / compute_.features.std[k];
  }
  float embedding[kMaxLayerWidth];
  compute_.shard_net.forward(f.data(), embedding);
  float log_alone = 0.0f;
  compute_.alone.forward(embedding, &log_alone);
  summary[0] = std::exp(log_alone);
  summary[1] = 1.0f;
  const auto width = static_cast<std::size_t>(compute_.shard_net.outputs());
  for (std::size_t o = 0; o < static_cast<std::size_t>(projected_width()); ++o) {
    const float* row = projection_.data() + o * width;
    float sum = 0.0f;
    for (std::size_t i = 0; i < width; ++i) sum += row[i] * embedding[i];
    summary[2 + o] = compute_.latency_weighted_context ? summary[0] * sum : sum;
  }
}

void NeuralCostModel::scale_shard_summary(float* summary, double factor) const {
  const auto f = static_cast<float>(factor);
  summary[0] *= f;
  if (!compute_.latency_weighted_context) return;
  for (int o = 0; o < projected_width(); ++o) summary[2 + o] *= f;
}

namespace {

// The head's logit from a device's summary sum: its first layer from the sum (see summary_size()), then
// the rest. The usual head, hidden ReLU units into one logit, sums its last layer in kLogitLanes
// independent chains joined in a fixed order: a single chain of 64 dependent additions was this
// function's critical path, and most of a search's time is here. Built for AVX2 machines too, with the
// same results bit for bit (every clone adds the same lanes in the same order).
constexpr std::size_t kLogitLanes = 8;  // the join below names each

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
float head_logit(const float* summary_sum, float weight_sum, float log_count, const DenseLayer& first,
                 const float* count_weight, const Mlp& rest) {
  const auto outs = static_cast<std::size_t>(first.outputs);
  const bool activated = !rest.layers.empty() || rest.relu_last;
  const bool rest_is_one_output = rest.layers.size() == 1 && rest.layers.front().outputs == 1 && !rest.relu_last;
  float hidden[kMaxLayerWidth];  // only the first `outs` are used: no need to clear the rest on every call
  for (std::size_t o = 0; o < outs; ++o) {
    const float pre = summary_sum[2 + o] / weight_sum + count_weight[o] * log_count + first.bias[o];
    hidden[o] = activated ? std::max(pre, 0.0f) : pre;
  }
  if (rest_is_one_output) {
    const float* weight = rest.layers.front().weight.data();
    float lanes[kLogitLanes] = {};
    std::size_t o = 0;
    for (; o + kLogitLanes <= outs; o += kLogitLanes) {
      for (std::size_t k = 0; k < kLogitLanes; ++k) lanes[k] += weight[o + k] * hidden[o + k];
    }
    for (std::size_t k = 0; o < outs; ++o, ++k) lanes[k] += weight[o] * hidden[o];
    const float sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    return rest.layers.front().bias[0] + sum;
  }
  if (rest.layers.empty()) return hidden[0];  // a head of one layer: its one output
  float logit = 0.0f;
  rest.forward(hidden, &logit);
  return logit;
}

// The comm net over rows `a` and rows `b`, where each b row equals its a row in the first `shared`
// inputs: the backward's rows are the forward's with the start delays, the last inputs, cleared. As two
// forward_batch calls, bit for bit; with a wide first layer, the shared inputs' part of its sums (which
// run over the inputs in order) is computed once for both.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void forward_rows_sharing_inputs(const Mlp& net, const float* a, const float* b, std::size_t n, std::size_t shared,
                                 float* a_out, float* b_out) {
  const auto ins = static_cast<std::size_t>(net.inputs());
  if (net.layers.size() != 2 || !is_wide(net.layers[0]) || shared > ins) {
    net.forward_batch(a, n, a_out);
    net.forward_batch(b, n, b_out);
    return;
  }
  const DenseLayer& first = net.layers[0];
  const auto width = static_cast<std::size_t>(first.outputs);
  thread_local std::vector<float> hidden;  // the a rows' hidden units, then the b rows'
  hidden.resize(2 * n * width);
  float* ha = hidden.data();
  float* hb = ha + n * width;
  for (std::size_t r = 0; r < n; ++r) {
    float* ha_r = ha + r * width;
    float* hb_r = hb + r * width;
    add_wide_inputs(first, a + r * ins, 0, shared, first.bias.data(), hb_r);  // the shared part, then each row's own
    add_wide_inputs(first, a + r * ins, shared, ins, hb_r, ha_r);
    add_wide_inputs(first, b + r * ins, shared, ins, hb_r, hb_r);
    activate(first, ha_r);
    activate(first, hb_r);
  }
  const DenseLayer& last = net.layers[1];
  const auto outs = static_cast<std::size_t>(last.outputs);
  layer_batch(last, ha, width, n, a_out, outs, net.relu_last);
  layer_batch(last, hb, width, n, b_out, outs, net.relu_last);
}

}  // namespace

double NeuralCostModel::compute_from_summary(const float* summary_sum) const {
  const float count = summary_sum[1];
  if (count <= 0.0f) return 0.0;
  const float weight_sum = compute_.latency_weighted_context ? summary_sum[0] : count;
  // Each shard counts 1, so the count is a whole number; its log from the table has the same bits. The
  // range is checked on the float first: a NaN or huge count must not reach the integer conversion.
  const bool tabulated = count < static_cast<float>(log_counts_.size()) && std::floor(count) == count;
  const float log_count = tabulated ? log_counts_[static_cast<std::size_t>(count)] : std::log(count);
  const float logit =
      head_logit(summary_sum, weight_sum, log_count, compute_.head.layers.front(), count_weight_.data(), head_rest_);
  // tanh from one exp: libm's tanh (through expm1) took as long as the head's sums.
  const double e = std::exp(2.0 * static_cast<double>(logit));
  const double tanh_logit = 1.0 - 2.0 / (e + 1.0);
  return static_cast<double>(summary_sum[0]) * std::exp(static_cast<double>(compute_.interaction_range) * tanh_logit) +
         static_cast<double>(compute_.step_cost_ms);
}

void NeuralCostModel::predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                                   std::vector<double>& fw_ms, std::vector<double>& bw_ms) const {
  if (structure_only_ || comm_.form == CommForm::kHierarchical) {
    predict_comm_hierarchical(dim_sums, compute_ms, fw_ms, bw_ms);
  } else {
    predict_comm_scale_free(dim_sums, compute_ms, fw_ms, bw_ms);
  }
  // A correction describes the host it was timed on: not other links the model is asked to plan for.
  if (!structure_only_) apply_comm_correction(comm_.correction, compute_ms, fw_ms, bw_ms);
}

void NeuralCostModel::predict_comm_scale_free(const std::vector<int64_t>& dim_sums,
                                              const std::vector<double>& compute_ms, std::vector<double>& fw_ms,
                                              std::vector<double>& bw_ms) const {
  const std::size_t n = dim_sums.size();
  fw_ms.assign(n, 0.0);
  bw_ms.assign(n, 0.0);
  if (n < 2) return;  // one device exchanges nothing
  // A device starts the collective when its compute ends.
  thread_local std::vector<CommFeatureVector> features;  // reused: the search predicts this for every change
  comm_features_into(dim_sums, compute_ms, features);
  const double latest = *std::max_element(compute_ms.begin(), compute_ms.end());  // as comm_waits
  for (CommFeatureVector& f : features) {
    for (int i = 0; i < kCommFeatures; ++i) {
      auto k = static_cast<std::size_t>(i);
      f[k] = (f[k] - comm_.features.mean[k]) / comm_.features.std[k];
    }
  }
  thread_local std::vector<float> outputs;
  outputs.resize(2 * n);
  static_assert(sizeof(CommFeatureVector) == kCommFeatures * sizeof(float), "features are packed rows");
  comm_.net.forward_batch(features.front().data(), n, outputs.data());
  for (std::size_t r = 0; r < n; ++r) {
    const float* out = outputs.data() + 2 * r;
    fw_ms[r] =
        (latest - compute_ms[r]) + std::exp(static_cast<double>(out[0] * comm_.target_std[0] + comm_.target_mean[0]));
    bw_ms[r] = std::exp(static_cast<double>(out[1] * comm_.target_std[1] + comm_.target_mean[1]));
  }
}

void NeuralCostModel::predict_comm_hierarchical(const std::vector<int64_t>& dim_sums,
                                                const std::vector<double>& compute_ms, std::vector<double>& fw_ms,
                                                std::vector<double>& bw_ms) const {
  const std::size_t n = dim_sums.size();
  fw_ms.assign(n, 0.0);
  bw_ms.assign(n, 0.0);
  if (n < 2) return;
  const double latest = *std::max_element(compute_ms.begin(), compute_ms.end());
  thread_local std::vector<HierCommFeatureVector> features;
  thread_local std::vector<double> structure;
  if (structure_only_) {
    hierarchical_alltoall_ms(planning_fabric_, dim_sums, structure);
    for (std::size_t r = 0; r < n; ++r) {
      fw_ms[r] = (latest - compute_ms[r]) + structure[r];
      bw_ms[r] = structure[r];
    }
    return;
  }
  hierarchical_comm_features_into(comm_.fabric, dim_sums, compute_ms, features, structure);
  auto normalized = [this](std::size_t k, float value) {
    const float clamped = std::min(std::max(value, comm_.input_min[k]), comm_.input_max[k]);
    return (clamped - comm_.features.mean[k]) / comm_.features.std[k];
  };
  for (HierCommFeatureVector& f : features) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(kHierCommFeatures); ++k) f[k] = normalized(k, f[k]);
  }
  thread_local std::vector<float> outputs;
  outputs.resize(2 * n);
  static_assert(sizeof(HierCommFeatureVector) == kHierCommFeatures * sizeof(float), "features are packed rows");
  const float* backward_outputs = outputs.data();
  if (comm_.backward_without_delays) {
    // The backward's rows: the forward's with the start delays cleared (the last inputs).
    thread_local std::vector<HierCommFeatureVector> backward_features;
    thread_local std::vector<float> backward_out;
    HierCommFeatureVector cleared{};  // the same for every row: normalised once
    clear_start_delays(cleared);
    for (std::size_t k = kFirstStartDelayFeature; k < cleared.size(); ++k) cleared[k] = normalized(k, cleared[k]);
    backward_features = features;
    for (HierCommFeatureVector& f : backward_features) {
      std::copy(cleared.begin() + kFirstStartDelayFeature, cleared.end(), f.begin() + kFirstStartDelayFeature);
    }
    backward_out.resize(2 * n);
    forward_rows_sharing_inputs(comm_.net, features.front().data(), backward_features.front().data(), n,
                                kFirstStartDelayFeature, outputs.data(), backward_out.data());
    backward_outputs = backward_out.data();
  } else {
    comm_.net.forward_batch(features.front().data(), n, outputs.data());
  }
  // The network's output is the log of measured over structural time.
  auto scaled = [&](std::size_t r, std::size_t output, float value) {
    return structure[r] * std::exp(static_cast<double>(value * comm_.target_std[output] + comm_.target_mean[output]));
  };
  for (std::size_t r = 0; r < n; ++r) {
    fw_ms[r] = (latest - compute_ms[r]) + scaled(r, 0, outputs[2 * r]);
    bw_ms[r] = scaled(r, 1, backward_outputs[2 * r + 1]);
  }
}

double NeuralCostModel::rowwise_collectives_ms(int64_t rw_dim, int num_devices) const {
  if (!structure_only_ && comm_.form == CommForm::kHierarchical && !comm_.rowwise.points.empty()) {
    const double fitted = fitted_rowwise_ms(comm_.rowwise, rw_dim, num_devices);
    // The pairs ran on one host; across hosts the network's per-step latency may cost more.
    if (planning_fabric_.devices_per_host < num_devices) {
      return std::max(fitted, CostModel::rowwise_collectives_ms(rw_dim, num_devices));
    }
    return fitted;
  }
  return CostModel::rowwise_collectives_ms(rw_dim, num_devices);
}

double NeuralCostModel::allreduce_ms(double bytes, int num_devices) const {
  if (structure_only_) return ring_allreduce_ms(planning_fabric_, bytes, num_devices);
  if (comm_.form == CommForm::kHierarchical)
    return fitted_allreduce_ms(comm_.allreduce, comm_.fabric, bytes, num_devices);
  return nominal_allreduce_ms(bytes, num_devices, comm_.fabric.devices_per_host);
}

void NeuralCostModel::predict_input_dist(const std::vector<double>& ids_per_sample, std::vector<double>& ms) const {
  if (structure_only_) return input_alltoall_ms(planning_fabric_, ids_per_sample, ms);
  if (comm_.form == CommForm::kHierarchical) return input_alltoall_ms(comm_.fabric, ids_per_sample, ms);
  CommFabric nominal = nominal_fabric(comm_.fabric.devices_per_host);
  nominal.batch_size = kScaleFreeCommBatch;
  input_alltoall_ms(nominal, ids_per_sample, ms);
}

double NeuralCostModel::alltoall_group_ms(int num_devices) const {
  if (structure_only_) return kCollectivesPerGroup * alltoall_latency_ms(planning_fabric_, num_devices);
  if (comm_.form == CommForm::kHierarchical)
    return kCollectivesPerGroup * alltoall_latency_ms(comm_.fabric, num_devices);
  return kCollectivesPerGroup * alltoall_latency_ms(nominal_fabric(comm_.fabric.devices_per_host), num_devices);
}

void NeuralCostModel::plan_for_hardware(CommFabric fabric) {
  const bool measured_here =
      comm_.form == CommForm::kHierarchical && !comm_.structure_only && fabric.name == comm_.fabric.name;
  fabric.batch_size = comm_.form == CommForm::kHierarchical ? comm_.fabric.batch_size : kScaleFreeCommBatch;
  structure_only_ = !measured_here;
  planning_fabric_ = std::move(fabric);
  hardware_.planning_hardware = planning_fabric_.name;
  hardware_.comm_structure_only = structure_only_;
}

void NeuralCostModel::set_devices_per_host(int devices_per_host) {
  comm_.fabric.devices_per_host = devices_per_host;
  planning_fabric_.devices_per_host = devices_per_host;
}

bool mlp_non_decreasing_in(const Mlp& mlp, int input) {
  if (mlp.layers.empty()) return true;
  const DenseLayer& first = mlp.layers.front();
  if (input < 0 || input >= first.inputs) return false;
  // Hidden units that see the input (or, past two layers, every unit) must pass it on with non-negative
  // weights; units that do not see it may be weighted freely.
  std::vector<bool> depends(static_cast<std::size_t>(first.outputs), true);
  for (int o = 0; o < first.outputs; ++o) {
    const float w = first.weight[static_cast<std::size_t>(o * first.inputs + input)];
    if (w < 0.0f) return false;
    if (mlp.layers.size() == 2) depends[static_cast<std::size_t>(o)] = w != 0.0f;
  }
  for (std::size_t l = 1; l < mlp.layers.size(); ++l) {
    const DenseLayer& layer = mlp.layers[l];
    for (int o = 0; o < layer.outputs; ++o) {
      for (int i = 0; i < layer.inputs; ++i) {
        const bool checked = l > 1 || depends[static_cast<std::size_t>(i)];
        if (checked && layer.weight[static_cast<std::size_t>(o * layer.inputs + i)] < 0.0f) return false;
      }
    }
  }
  return true;
}

}  // namespace shardplan
