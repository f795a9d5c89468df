#include "shardplan/torch/compute_benchmark.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/costs/tbe_timer.hpp"
#include "shardplan/costs/timing_memory.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "shardplan/core/errors.hpp"
#include "shardplan/dataset/trace.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

namespace {

// One table-batched operator: every shard of one width, rows stacked in one weight matrix.
struct WidthGroup {
  torch::Tensor weight;   // [sum of rows, width], requires grad
  torch::Tensor indices;  // all lookups, each shifted by its shard's first row in `weight`
  torch::Tensor offsets;  // bag starts over all shards' bags, plus the final end (include_last_offset)
  torch::Tensor grad_output;
};

// The device of a validated config ("cpu" or "cuda"), when this machine has it.
torch::Device parse_device(const std::string& name, int index) {
  if (name != "cuda") return torch::kCPU;
  if (!torch::cuda::is_available()) {
    throw SettingError("device",
                       "cuda requested but this LibTorch has no CUDA device (it was built without CUDA or no GPU is "
                       "visible)");
  }
  if (index >= static_cast<int>(torch::cuda::device_count())) {
    throw SettingError("device", fmt::format("cuda:{} requested but {} CUDA device(s) are visible", index,
                                             torch::cuda::device_count()));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

std::vector<WidthGroup> build_groups(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed,
                                     const torch::Device& device) {
  std::map<int, std::vector<std::size_t>> by_width;
  for (std::size_t i = 0; i < shards.size(); ++i) by_width[shards[i].dim].push_back(i);
  // Drawing the traces (millions of lookups at a GPU's batch) took most of a sample's time on an H100;
  // each depends on its shard and seed alone, so for a GPU they are drawn on every core. A CPU's timing
  // keeps one thread, as its bundled data was collected (other threads' heaps could change its memory).
  std::vector<IndexTrace> traces(shards.size());
  parallel_for(static_cast<int>(shards.size()), device.is_cuda() ? 0 : 1, [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    traces[k] = synthesize_trace(shards[k], config.batch_size, seed + k * 7919);
  });
  std::vector<WidthGroup> groups;
  for (const auto& [width, members] : by_width) {
    int64_t total_rows = 0;
    std::vector<int64_t> indices;
    std::vector<int64_t> offsets;
    for (std::size_t i : members) {
      const IndexTrace trace = std::move(traces[i]);
      int64_t base = static_cast<int64_t>(indices.size());
      for (int64_t b = 0; b < config.batch_size; ++b)
        offsets.push_back(base + trace.offsets[static_cast<std::size_t>(b)]);
      for (int64_t id : trace.indices) indices.push_back(id + total_rows);
      total_rows += shards[i].rows;
    }
    offsets.push_back(static_cast<int64_t>(indices.size()));
    WidthGroup group;
    auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    // Zeros: the values do not change the kernels' speed, and filling is far cheaper than random init.
    group.weight = torch::zeros({total_rows, width}, options).requires_grad_(true);
    auto long_options = torch::TensorOptions().dtype(torch::kInt64);
    // from_blob only borrows the vectors' memory: copy before they go out of scope (.to(cpu) would not).
    group.indices = torch::from_blob(indices.data(), {static_cast<int64_t>(indices.size())}, long_options)
                        .to(device, /*non_blocking=*/false, /*copy=*/true);
    group.offsets = torch::from_blob(offsets.data(), {static_cast<int64_t>(offsets.size())}, long_options)
                        .to(device, /*non_blocking=*/false, /*copy=*/true);
    int64_t bags = static_cast<int64_t>(offsets.size()) - 1;
    group.grad_output = torch::ones({bags, width}, options);
    groups.push_back(std::move(group));
  }
  return groups;
}

// Forward, backward and sparse SGD update of every group: one training step of the embedding stage.
void train_step(std::vector<WidthGroup>& groups) {
  constexpr double kLearningRate = 0.01;
  for (auto& g : groups) {
    auto pooled = std::get<0>(at::embedding_bag(g.weight, g.indices, g.offsets, /*scale_grad_by_freq=*/false,
                                                /*mode=sum*/ 0, /*sparse=*/true, /*per_sample_weights=*/{},
                                                /*include_last_offset=*/true));
    pooled.backward(g.grad_output);
  }
  torch::NoGradGuard no_grad;
  for (auto& g : groups) {
    g.weight.add_(g.weight.grad(), -kLearningRate);
    g.weight.mutable_grad() = torch::Tensor();
  }
}

}  // namespace

ComputeTiming measure_compute_step(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed) {
  if (shards.empty()) throw InputError("measure_compute_step: no shards");
  validate_compute_bench(config);
  if (config.kernel == ComputeBenchConfig::kFbgemmTbeKernel) return measure_with_tbe(shards, config, seed);
  torch::Device device = parse_device(config.device, config.device_index);
  at::set_num_threads(config.threads);
  prepare_memory_for_timing();
  try {
    std::vector<WidthGroup> groups = build_groups(shards, config, seed, device);
    for (int i = 0; i < config.warmup_iterations; ++i) train_step(groups);
    synchronize(device);
    ComputeTiming timing;
    for (int i = 0; i < config.timed_iterations; ++i) {
      auto start = std::chrono::steady_clock::now();
      train_step(groups);
      synchronize(device);
      timing.iterations_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    timing.median_ms = median(timing.iterations_ms);
    return timing;
  } catch (const c10::Error& e) {
    throw RuntimeFailure(fmt::format("LibTorch failed while measuring: {}", e.what_without_backtrace()));
  }
}

ComputeTimer compute_timer(const ComputeBenchConfig& config) {
  return
      [config](const std::vector<Table>& shards, uint64_t seed) { return measure_compute_step(shards, config, seed); };
}

std::string torch_version() { return TORCH_VERSION; }

bool cuda_available() { return torch::cuda::is_available(); }

}  // namespace shardplan
