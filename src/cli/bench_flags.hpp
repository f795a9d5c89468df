#pragma once
// The compute benchmark's flags, shared by everything that times shard sets on this machine's device
// (collect-costs compute, evaluate --measure, bench --measure), so they mean the same everywhere.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/costs/measure.hpp"
#include "shardplan/costs/plan_measurement.hpp"
#include "shardplan/search/measure_loop_config.hpp"

namespace shardplan::cli {

// Flags --<prefix>batch-size, --<prefix>device, ...: collect-costs uses no prefix; commands whose other
// flags would clash (bench has the search's --threads) use "measure-". --kernel has no prefix anywhere.
void add_bench_options(CLI::App& app, ComputeBenchConfig& config, const std::string& prefix = "");
// Throws InputError naming the flag and value. When `measuring` with --kernel fbgemm-tbe, finds the
// Python worker that runs FBGEMM (InputError saying how to install it when there is none).
void check_bench_options(ComputeBenchConfig& config, const std::string& prefix = "", bool measuring = true);

// What evaluate and bench measure plans with: --measure-mem-cap and the "measure-" benchmark flags.
struct MeasureFlags {
  ComputeBenchConfig bench = PlanMeasureConfig::default_bench();
  std::string mem_cap = "auto";
  int rounds = 3;
  int64_t memory_cap_bytes = 0;  // parsed by check_measure_options; 0: auto
};

void add_measure_options(CLI::App& app, MeasureFlags& flags);
// How the flags measure, with traces seeded by `trace_seed`.
PlanMeasureConfig plan_measure_config(const MeasureFlags& flags, uint64_t trace_seed, bool quiet);
// Checks the flags and parses the cap; when `measuring`, also that this build can measure (it needs
// LibTorch). Throws InputError naming the flag.
void check_measure_options(MeasureFlags& flags, bool measuring);
// Warns when this machine's measuring device is not the one the model's compute part was measured on:
// then measured and predicted compute differ by the machines' speed, not only by the model's error.
void warn_if_measuring_other_hardware(const CostModel& model, const MeasureFlags& flags);
// How shard sets are measured here: measure_shard_sets with the flags, quietly, their traces seeded by
// `trace_seed`. Empty in a build without LibTorch.
ShardSetMeasurer shard_set_measurer(const MeasureFlags& flags, uint64_t trace_seed);
// The traces of measured-in-the-loop planning: another stream of `seed` than bench's and evaluate's, so
// that a plan chosen on a lucky measurement is not judged by the same one.
uint64_t measure_loop_trace_seed(uint64_t seed);

// --measure-loop-candidates, shared by plan and bench.
void add_measure_loop_options(CLI::App& app, MeasureLoopConfig& config);

// Runs each device of `plans` on this machine's device (measure_plans: identical devices measured once).
std::vector<PlanMeasurement> measure_on_this_machine(const MeasureFlags& flags, const std::vector<const Plan*>& plans,
                                                     const std::vector<Table>& tables, uint64_t seed, bool quiet);

}  // namespace shardplan::cli
