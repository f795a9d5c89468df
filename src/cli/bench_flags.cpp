#include "bench_flags.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "python_stack.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan::cli {

void add_bench_options(CLI::App& app, ComputeBenchConfig& config, const std::string& prefix) {
  app.add_option("--" + prefix + "batch-size", config.batch_size, "Samples per training step")->capture_default_str();
  app.add_option("--" + prefix + "device", config.device, "cpu or cuda")->capture_default_str();
  app.add_option("--" + prefix + "warmup", config.warmup_iterations, "Untimed steps before timing")
      ->capture_default_str();
  app.add_option("--" + prefix + "iterations", config.timed_iterations, "Timed steps")->capture_default_str();
  app.add_option("--" + prefix + "threads", config.threads, "CPU threads for LibTorch's kernels")
      ->capture_default_str();
  app.add_option("--kernel", config.kernel,
                 "embedding_bag (LibTorch's, this binary's own) or fbgemm-tbe (FBGEMM's table-batched embedding, as "
                 "TorchRec trains; needs the Python stack, scripts/setup-python.sh)")
      ->capture_default_str();
}

namespace {

// The flag of a benchmark setting (validate_compute_bench's names) under `prefix`; --kernel has none.
std::string bench_flag(const std::string& setting, const std::string& prefix) {
  if (setting == "kernel") return "--kernel";
  if (setting == "timed iterations") return "--" + prefix + "iterations";
  if (setting == "warm-up iterations") return "--" + prefix + "warmup";
  if (setting == "batch size") return "--" + prefix + "batch-size";
  return "--" + prefix + setting;  // threads, device
}

}  // namespace

void check_bench_options(ComputeBenchConfig& config, const std::string& prefix, bool measuring) {
  try {
    validate_compute_bench(config);
  } catch (const SettingError& e) {
    throw InputError(fmt::format("{}: {}", bench_flag(e.setting(), prefix), e.rule()));
  }
  const bool tbe = config.kernel == ComputeBenchConfig::kFbgemmTbeKernel;
  if (measuring && tbe && config.tbe_worker.command.empty()) config.tbe_worker = tbe_worker_program();
}

PlanMeasureConfig plan_measure_config(const MeasureFlags& flags, uint64_t trace_seed, bool quiet) {
  PlanMeasureConfig config;
  config.memory_cap_bytes = flags.memory_cap_bytes;
  config.seed = trace_seed;
  config.rounds = flags.rounds;
  config.quiet = quiet;
  return config;
}

void add_measure_options(CLI::App& app, MeasureFlags& flags) {
  app.add_option("--measure-mem-cap", flags.mem_cap,
                 "Skip devices whose weights exceed this when measuring (e.g. 8GiB; auto: half of physical memory)")
      ->capture_default_str();
  app.add_option("--measure-rounds", flags.rounds,
                 "Times every distinct shard set is built and timed, in interleaved rounds; the fastest is kept")
      ->capture_default_str();
  add_bench_options(app, flags.bench, "measure-");
}

void check_measure_options(MeasureFlags& flags, bool measuring) {
  check_bench_options(flags.bench, "measure-", measuring);
  validate_plan_measure(plan_measure_config(flags, 0, true));  // SettingError: main names --measure-rounds
  flags.memory_cap_bytes = flags.mem_cap == "auto" ? 0 : parse_byte_size(flags.mem_cap, "--measure-mem-cap");
#if !SHARDPLAN_WITH_TORCH
  if (measuring) {
    throw InputError(
        "--measure: this shard-plan was built without LibTorch (SHARDPLAN_WITH_TORCH=OFF), which "
        "measuring needs");
  }
#else
  (void)measuring;
#endif
}

void warn_if_measuring_other_hardware(const CostModel& model, const MeasureFlags& flags) {
#if SHARDPLAN_WITH_TORCH
  const ModelHardware hardware = model.hardware();
  const std::string here = device_model(flags.bench.device);
  if (!same_compute_hardware(hardware, flags.bench.device, here)) {
    spdlog::warn(
        "the cost model's compute was measured on {}, but this machine measures on {} ({}): predicted and "
        "measured compute differ by the machines' speed as well as by the model's error (`shard-plan "
        "calibrate` adapts a model to this machine)",
        describe_hardware(hardware), flags.bench.device, here);
  }
  if (!hardware.compute_kernel.empty() && hardware.compute_kernel != flags.bench.kernel) {
    spdlog::warn(
        "the cost model's compute was timed with the {} kernel, and this measures with {}: predicted and "
        "measured compute differ by the kernels as well (--kernel)",
        hardware.compute_kernel, flags.bench.kernel);
  }
#else
  (void)model, (void)flags;
#endif
}

ShardSetMeasurer shard_set_measurer(const MeasureFlags& flags, uint64_t trace_seed) {
#if SHARDPLAN_WITH_TORCH
  const PlanMeasureConfig config = plan_measure_config(flags, trace_seed, /*quiet=*/true);
  return [config, timer = compute_timer(flags.bench)](const std::vector<std::vector<Table>>& sets) {
    return measure_shard_sets(sets, config, timer);
  };
#else
  (void)flags, (void)trace_seed;
  return {};
#endif
}

uint64_t measure_loop_trace_seed(uint64_t seed) {
  constexpr uint64_t kLoopTraceStream = 0x6c6f6f70ull;  // "loop"
  return derive_seed(seed, kLoopTraceStream);
}

void add_measure_loop_options(CLI::App& app, MeasureLoopConfig& config) {
  app.add_option("--measure-loop-candidates", config.candidates,
                 "Measured-in-the-loop planning: distinct plans each search hands over, compared on measured compute "
                 "at the end")
      ->capture_default_str();
  app.add_option("--measure-loop-rivals", config.rivals,
                 "Measured-in-the-loop planning: baseline planners whose plans join the candidates, their bounding "
                 "devices measured too; one is handed over when it measures faster by more than the model's "
                 "remaining error (comma-separated, e.g. torchrec)")
      ->delimiter(',');
}

std::vector<PlanMeasurement> measure_on_this_machine(const MeasureFlags& flags, const std::vector<const Plan*>& plans,
                                                     const std::vector<Table>& tables, uint64_t seed, bool quiet) {
#if SHARDPLAN_WITH_TORCH
  return measure_plans(plans, tables, plan_measure_config(flags, seed, quiet), compute_timer(flags.bench));
#else
  (void)flags, (void)plans, (void)tables, (void)seed, (void)quiet;
  throw InputError("--measure: this shard-plan was built without LibTorch, which measuring needs");
#endif
}

}  // namespace shardplan::cli
