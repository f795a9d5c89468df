#pragma once
// Times one training step of a device's embedding stage the way production runs it: the shards grouped
// by width into table-batched embedding-bag operators (one per width, like FBGEMM's TBE), forward
// sum-pooling, backward with sparse gradients, and the sparse SGD update. No LibTorch types here.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/external_program.hpp"
#include "shardplan/table.hpp"

namespace shardplan {

struct ComputeBenchConfig {
  // Defaults suit a CPU (a sample takes about half a second); on a GPU use production batches (65536).
  std::string device = "cpu";  // "cpu" or "cuda"
  int64_t batch_size = 2048;   // samples per step
  int warmup_iterations = 1;
  int timed_iterations = 3;  // the median is recorded
  int threads = 1;           // intra-op threads on the CPU: one core, so other work disturbs it less
  // kEmbeddingBag: LibTorch's embedding_bag per width with a sparse SGD step (this binary's own);
  // kFbgemmTbe: FBGEMM's table-batched embedding as TorchRec runs it, timed by `tbe_worker`.
  std::string kernel = kEmbeddingBagKernel;
  ExternalProgram tbe_worker;  // shardplan.measure.tbe_worker (the CLI finds it for kFbgemmTbe)

  static constexpr const char* kEmbeddingBagKernel = "embedding_bag";
  static constexpr const char* kFbgemmTbeKernel = "fbgemm-tbe";
};

struct ComputeTiming {
  double median_ms = 0.0;
  std::vector<double> iterations_ms;
};

// `shards` are full tables or column pieces (rows x dim with the table's traffic). Index traces are
// synthesised from each shard's pooling factor and reuse histogram with `seed` (the same for either
// kernel). Throws InputError for an unavailable device, RuntimeFailure when the kernel fails (out of
// memory, say).
ComputeTiming measure_compute_step(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed);

// Facts recorded with every measurement.
std::string torch_version();
bool cuda_available();
std::string cpu_model();
std::string device_model(const std::string& device);
// LibTorch's C++ API does not name the GPU; NVIDIA's driver does, in each GPU's folder under
// /proc/driver/nvidia/gpus (a line "Model: NVIDIA H100 80GB HBM3"). The first GPU's by bus id; empty
// when there is none.
std::string nvidia_gpu_model(const std::string& driver_gpus_dir = "/proc/driver/nvidia/gpus");

}  // namespace shardplan
