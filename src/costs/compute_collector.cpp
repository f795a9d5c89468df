#include "shardplan/costs/compute_collector.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/costs/tbe_timer.hpp"
#include "shardplan/costs/timing_memory.hpp"

namespace shardplan {

namespace {

constexpr int kWidthStep = 4;
constexpr int kMaxAugmentedWidth = 128;
// Draws rejected by the memory cap before a sample settles for fewer shards.
constexpr int kMaxRejections = 64;

nlohmann::json collection_meta(const std::vector<Table>& pool, const ComputeCollectConfig& config) {
  // "config" must match for a directory to be resumed: anything that changes what a sample means.
  nlohmann::json settings = {{"pool", config.pool_path},
                             {"pool_tables", pool.size()},
                             {"seed", config.seed},
                             {"max_tables", config.max_tables},
                             {"memory_cap_bytes", config.memory_cap_bytes},
                             {"widths", fmt::format("{}..{} step {}", kWidthStep, kMaxAugmentedWidth, kWidthStep)}};
  return compute_collection_meta(std::move(settings), config.bench, config.seed, config.command_line,
                                 config.torch_version);
}

std::string kernel_detail(const ComputeBenchConfig& bench) {
  if (bench.kernel == ComputeBenchConfig::kFbgemmTbeKernel) {
    return "FBGEMM SplitTableBatchedEmbeddingBagsCodegen, one per data type (sum pooling, forward, backward and "
           "fused EXACT_SGD update), " +
           tbe_versions(bench);
  }
  return "torch embedding_bag (sum, sparse grad) per width group, sparse SGD update";
}

}  // namespace

nlohmann::json compute_collection_meta(nlohmann::json settings, const ComputeBenchConfig& bench, uint64_t seed,
                                       const std::string& command_line, const std::string& torch_version) {
  settings["device"] = bench.device;
  settings["batch_size"] = bench.batch_size;
  settings["threads"] = bench.threads;
  settings["warmup_iterations"] = bench.warmup_iterations;
  settings["timed_iterations"] = bench.timed_iterations;
  settings["memory"] = memory_policy();
  return {{"kind", "compute"},
          {"config", std::move(settings)},
          {"device", bench.device},
          {"device_model", device_model(bench.device)},
          {"cpu_model", cpu_model()},
          {"threads", bench.threads},
          {"torch_version", torch_version},
          {"batch_size", bench.batch_size},
          {"seed", seed},
          {"host", host_name()},
          {"load_average_at_start", load_average()},
          {"date", utc_now()},
          {"command", command_line},
          {"kernel", bench.kernel},
          {"kernel_detail", kernel_detail(bench)}};
}

std::vector<Table> draw_compute_sample(const std::vector<Table>& pool, int max_tables, int64_t memory_cap_bytes,
                                       uint64_t seed, int64_t index) {
  Rng rng(derive_seed(seed, static_cast<uint64_t>(index)));
  int target = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(max_tables)));
  std::vector<Table> shards;
  int64_t bytes = 0;
  int rejections = 0;
  while (static_cast<int>(shards.size()) < target && rejections < kMaxRejections) {
    Table shard = pool[rng.below(pool.size())];
    shard.dim = kWidthStep * (1 + static_cast<int>(rng.below(kMaxAugmentedWidth / kWidthStep)));
    shard.dtype = DType::kFp32;
    int64_t shard_bytes = shard_memory_bytes(shard.rows, shard.dim, DType::kFp32, Optimizer::kSgd);
    if (bytes + shard_bytes > memory_cap_bytes) {
      ++rejections;
      continue;
    }
    bytes += shard_bytes;
    shards.push_back(std::move(shard));
  }
  if (shards.empty()) {
    throw SettingError("memory cap",
                       fmt::format("{} bytes holds no pool table even at width 4; raise it", memory_cap_bytes));
  }
  return shards;
}

CollectSummary collect_compute_costs(const std::vector<Table>& pool, const ComputeCollectConfig& config,
                                     const ComputeTimer& timer) {
  if (pool.empty()) throw InputError(fmt::format("{}: the pool has no tables", config.pool_path));
  if (config.samples < 1) throw SettingError("samples", fmt::format("must be at least 1, got {}", config.samples));
  if (config.max_tables < 1)
    throw SettingError("tables per set", fmt::format("must be at least 1, got {}", config.max_tables));
  prepare_memory_for_timing();  // before the metadata records the policy
  CostDataWriter writer(config.out_dir, collection_meta(pool, config));
  CollectSummary summary;
  summary.existing = writer.existing_samples();
  if (summary.existing >= config.samples) {
    spdlog::info("{}: already holds {} samples (asked for {}); nothing to do", config.out_dir, summary.existing,
                 config.samples);
    return summary;
  }
  if (summary.existing > 0) spdlog::info("{}: resuming after {} samples", config.out_dir, summary.existing);

  install_interrupt_handlers();
  auto start = std::chrono::steady_clock::now();
  Progress progress("samples", config.samples, summary.existing, config.quiet);
  for (int64_t i = summary.existing; i < config.samples; ++i) {
    if (interrupt_requested()) {
      summary.interrupted = true;
      break;
    }
    std::vector<Table> shards = draw_compute_sample(pool, config.max_tables, config.memory_cap_bytes, config.seed, i);
    ComputeTiming timing = timer(shards, derive_seed(config.seed ^ 0x7472616365ull, static_cast<uint64_t>(i)));
    ComputeSample sample;
    for (const auto& shard : shards) sample.shards.push_back(shard_features(shard, shard.dim));
    sample.latency_ms = timing.median_ms;
    sample.iterations_ms = timing.iterations_ms;
    writer.append(compute_sample_to_json(sample));
    ++summary.written;
    progress.update(i + 1, fmt::format("last {} shards {:.2f} ms", shards.size(), timing.median_ms));
  }
  progress.finish();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace shardplan
