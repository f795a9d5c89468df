#include "bench_flags.hpp"

#include <fmt/format.h>

#include "shardplan/errors.hpp"

namespace shardplan::cli {

void add_bench_options(CLI::App& app, ComputeBenchConfig& config, const std::string& prefix) {
  app.add_option("--" + prefix + "batch-size", config.batch_size, "Samples per training step")->capture_default_str();
  app.add_option("--" + prefix + "device", config.device, "cpu or cuda")->capture_default_str();
  app.add_option("--" + prefix + "warmup", config.warmup_iterations, "Untimed steps before timing")->capture_default_str();
  app.add_option("--" + prefix + "iterations", config.timed_iterations, "Timed steps")->capture_default_str();
  app.add_option("--" + prefix + "threads", config.threads, "CPU threads for LibTorch's kernels")->capture_default_str();
}

void check_bench_options(const ComputeBenchConfig& config, const std::string& prefix) {
  if (config.batch_size < 1 || config.batch_size > (1 << 24)) {
    throw InputError(fmt::format("--{}batch-size: must be in [1, 16777216], got {}", prefix, config.batch_size));
  }
  if (config.timed_iterations < 1 || config.timed_iterations > 10000) {
    throw InputError(fmt::format("--{}iterations: must be in [1, 10000], got {}", prefix, config.timed_iterations));
  }
  if (config.warmup_iterations < 0 || config.warmup_iterations > 10000) {
    throw InputError(fmt::format("--{}warmup: must be in [0, 10000], got {}", prefix, config.warmup_iterations));
  }
  if (config.threads < 1 || config.threads > 1024) {
    throw InputError(fmt::format("--{}threads: must be in [1, 1024], got {}", prefix, config.threads));
  }
  if (config.device != "cpu" && config.device != "cuda") {
    throw InputError(fmt::format("--{}device: must be cpu or cuda, got '{}'", prefix, config.device));
  }
}

}  // namespace shardplan::cli
