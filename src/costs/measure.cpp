#include "shardplan/costs/measure.hpp"

#include <fmt/format.h>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;
constexpr int kMaxIterations = 10000;
constexpr int kMaxThreads = 1024;

}  // namespace

void validate_compute_bench(const ComputeBenchConfig& config) {
  if (config.kernel != ComputeBenchConfig::kEmbeddingBagKernel &&
      config.kernel != ComputeBenchConfig::kFbgemmTbeKernel) {
    throw SettingError("kernel", fmt::format("must be {} or {}, got '{}'", ComputeBenchConfig::kEmbeddingBagKernel,
                                             ComputeBenchConfig::kFbgemmTbeKernel, config.kernel));
  }
  if (config.batch_size < 1 || config.batch_size > kMaxBatchSize) {
    throw SettingError("batch size", fmt::format("must be in [1, {}], got {}", kMaxBatchSize, config.batch_size));
  }
  if (config.timed_iterations < 1 || config.timed_iterations > kMaxIterations) {
    throw SettingError("timed iterations",
                       fmt::format("must be in [1, {}], got {}", kMaxIterations, config.timed_iterations));
  }
  if (config.warmup_iterations < 0 || config.warmup_iterations > kMaxIterations) {
    throw SettingError("warm-up iterations",
                       fmt::format("must be in [0, {}], got {}", kMaxIterations, config.warmup_iterations));
  }
  if (config.threads < 1 || config.threads > kMaxThreads) {
    throw SettingError("threads", fmt::format("must be in [1, {}], got {}", kMaxThreads, config.threads));
  }
  if (config.device != "cpu" && config.device != "cuda") {
    throw SettingError("device", fmt::format("must be cpu or cuda, got '{}'", config.device));
  }
  if (config.device_index < 0 || (config.device == "cpu" && config.device_index != 0)) {
    throw SettingError("device index",
                       fmt::format("must be 0 on the CPU and non-negative on a GPU, got {}", config.device_index));
  }
}

}  // namespace shardplan
