#pragma once
// Runs each device's shard set of a plan on this machine's device with the benchmark kernel and index
// traces that `collect-costs compute` uses, one device at a time. No LibTorch types here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/costs/compute_benchmark.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {

struct PlanMeasureConfig {
  ComputeBenchConfig bench = default_bench();
  // A device whose shards' weights exceed this is skipped with a reason, not attempted.
  int64_t memory_cap_bytes = 0;  // 0: half of this machine's physical memory
  uint64_t seed = 0;             // index traces
  bool quiet = false;

  // The settings the bundled model's compute data was collected with (data/costs/*/compute/meta.json).
  static ComputeBenchConfig default_bench() {
    ComputeBenchConfig bench;
    bench.timed_iterations = 5;
    return bench;
  }
};

struct PlanMeasurement {
  // Per device: the fastest timed step in ms, the statistic the cost model is trained on (other work on
  // the machine only adds time). An empty device measures 0.
  std::vector<std::optional<double>> compute_ms;
  std::vector<std::string> skipped;  // per device: why it was not measured ("" when it was)
  bool interrupted = false;          // Ctrl-C: the devices not reached are skipped
};

// Bytes the benchmark allocates for a device's shards (fp32 weights, as collect-costs builds them).
int64_t measured_weight_bytes(const std::vector<Table>& shards);

// Half of physical memory: room for the weights, their gradients and everything else running.
int64_t default_measure_memory_cap();

PlanMeasurement measure_plan(const Plan& plan, const std::vector<Table>& tables, const PlanMeasureConfig& config);

}  // namespace shardplan
