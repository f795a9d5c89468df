#pragma once
// Runs each device's shard set of a plan on this machine's device with the benchmark kernel and index
// traces that `collect-costs compute` uses, one device at a time, each timed by the ComputeTimer handed in
// (measure.hpp). No LibTorch types here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/plan.hpp"
#include "shardplan/costs/measure.hpp"
#include "shardplan/search/measure_loop_config.hpp"

namespace shardplan {

struct PlanMeasureConfig {
  // A device whose shards' weights exceed this is skipped with a reason, not attempted.
  int64_t memory_cap_bytes = 0;  // 0: half of this machine's physical memory
  uint64_t seed = 0;             // index traces
  // Every distinct shard set is built and timed this many times, in interleaved rounds, and keeps its
  // fastest step: a fresh build lands its weights in fresh memory, and placement noise only adds time.
  int rounds = 1;
  bool quiet = false;

  // The settings plans are timed with by default (the timer's): those the bundled model's compute data was
  // collected with (data/costs/*/compute/meta.json).
  static ComputeBenchConfig default_bench() {
    ComputeBenchConfig bench;
    bench.timed_iterations = 5;
    return bench;
  }
};

// Throws SettingError("measure rounds") when the rounds are out of their range.
void validate_plan_measure(const PlanMeasureConfig& config);

struct PlanMeasurement {
  // Per device: the fastest timed step in ms, the statistic the cost model is trained on (other work on
  // the machine only adds time). An empty device measures 0.
  std::vector<std::optional<double>> compute_ms;
  std::vector<std::string> skipped;  // per device: why it was not measured ("" when it was)
  bool interrupted = false;          // Ctrl-C: the devices not reached are skipped
};

// Measures plans of the same tables together. Devices holding the same shards (in any plan, in any
// order) are one shard set, measured once per round with the same traces, so identical devices get
// identical numbers and every plan sees the machine's drift alike. Traces are seeded by config.seed and
// the set's contents, so a shard set measures the same way in every plan. Returns one result per plan.
std::vector<PlanMeasurement> measure_plans(const std::vector<const Plan*>& plans, const std::vector<Table>& tables,
                                           const PlanMeasureConfig& config, const ComputeTimer& timer);

PlanMeasurement measure_plan(const Plan& plan, const std::vector<Table>& tables, const PlanMeasureConfig& config,
                             const ComputeTimer& timer);

// Plans of the same tables measured together through `measure` (a ShardSetMeasurer, as a measured-in-the-loop
// planner gets; shard_set_measurer in the CLI is measure_shard_sets below): their devices' distinct
// non-empty shard sets, each once and in canonical order, in one call, so identical devices get identical
// numbers. Per plan, per device: the set's measurement (an empty device measures 0; nullopt: not measured).
std::vector<std::vector<std::optional<double>>> measure_plan_devices(const std::vector<const Plan*>& plans,
                                                                     const std::vector<Table>& tables,
                                                                     const ShardSetMeasurer& measure);

// Measures shard sets given directly (each a device's pieces, non-empty), with the same rounds, cap and
// content-seeded traces as measure_plans: the fastest step of each, nullopt when skipped or interrupted.
std::vector<std::optional<double>> measure_shard_sets(const std::vector<std::vector<Table>>& sets,
                                                      const PlanMeasureConfig& config, const ComputeTimer& timer);

}  // namespace shardplan
