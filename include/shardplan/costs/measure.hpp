#pragma once
// What the collectors measure with. They are handed a ComputeTimer, which times one shard set's training
// step on this machine's device, and a CommTimer, which times the all-to-alls of plans; the torch layer
// implements them (compute_benchmark.hpp's compute_timer, local_comm_timer.hpp's), and tests hand in
// stand-ins. Measuring many shard sets in rounds, as planners and bench do, is search's ShardSetMeasurer
// (plan_measurement.hpp's measure_shard_sets over a ComputeTimer). No LibTorch here.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/external_program.hpp"
#include "shardplan/core/measured_comm.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

struct ComputeBenchConfig {
  // Defaults suit a CPU (a sample takes about half a second); on a GPU use production batches (65536).
  std::string device = "cpu";  // "cpu" or "cuda"
  int device_index = 0;        // which GPU with "cuda": a job's rank times on its own (LOCAL_RANK)
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

// Throws SettingError naming the setting ("kernel", "batch size", "timed iterations", "warm-up iterations",
// "threads", "device") when one is out of its range.
void validate_compute_bench(const ComputeBenchConfig& config);

struct ComputeTiming {
  double median_ms = 0.0;
  std::vector<double> iterations_ms;
  std::string timed_on;  // where, when a job's rank timed it ("rank 1 of host-a, cuda:1"); empty: here
};

// Times one training step of `shards` (full tables or column pieces, rows x dim with the table's traffic),
// their index traces synthesised with `trace_seed`. Throws InputError for an unavailable device,
// RuntimeFailure when the kernel fails (out of memory, say).
using ComputeTimer = std::function<ComputeTiming(const std::vector<Table>& shards, uint64_t trace_seed)>;

// Times the all-to-alls of plans, all of one world size, at a global batch: one result per plan, nullopt
// for one not timed.
using CommTimer =
    std::function<std::vector<std::optional<MeasuredComm>>(const std::vector<CommToMeasure>&, int64_t batch_size)>;

}  // namespace shardplan
