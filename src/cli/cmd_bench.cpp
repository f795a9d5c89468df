// shard-plan bench --tasks FILE: every task planned by every algorithm, scored by one model.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "comm_measure.hpp"
#include "commands.hpp"
#include "planning_flags.hpp"
#include "python_stack.hpp"
#include "shardplan/bench/bench.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan::cli {

namespace {

struct BenchFlags {
  std::string tasks_path;
  std::vector<std::string> algorithms = planner_names();
  std::string model;
  bool json = false;
  bool per_task = false;
  uint64_t seed = 0;
  NeuroShardConfig search;
  int measure_tasks = 0;
  MeasureFlags measure_flags;
  MeasureLoopConfig loop;
  CommMeasureFlags comm_flags;
  std::string hardware;
  LogOptions log_options;

  bool loop_planner() const {
    return std::find(algorithms.begin(), algorithms.end(), "neuroshard_measured") != algorithms.end();
  }
};

void add_bench_command_options(CLI::App& app, BenchFlags& f) {
  app.add_option("--tasks", f.tasks_path, "Task set file (gen-tasks writes them; data/tasks/ has the benchmark's)")
      ->required();
  app.add_option("--algos", f.algorithms, "Comma-separated planners: " + planners_help())
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  add_seed_option(app, f.seed, "Seed for randomised planners");
  app.add_flag("--json", f.json, "Print the results as JSON on stdout");
  app.add_flag("--per-task", f.per_task, "With --json, list every task's cost per algorithm");
  add_model_option(app, f.model);
  add_search_options(app, f.search);
  app.add_option("--measure", f.measure_tasks, "Also measure the plans of the first N tasks on this machine's device")
      ->capture_default_str();
  add_measure_options(app, f.measure_flags);
  app.add_option("--measure-loop", f.loop.budget, "Shard sets neuroshard_measured may measure per task while planning")
      ->capture_default_str();
  add_measure_loop_options(app, f.loop);
  add_comm_measure_options(app, f.comm_flags);
  add_hardware_option(app, f.hardware);
  add_log_options(app, f.log_options);
}

void check_bench_flags(BenchFlags& f) {
  if (f.measure_tasks < 0) {
    throw InputError(fmt::format("--measure: must be 0 or more tasks, got {}", f.measure_tasks));
  }
  const bool loop_planner = f.loop_planner();
  check_measure_options(f.measure_flags, f.measure_tasks > 0 || loop_planner);
  if (loop_planner) validate_measure_loop_config(f.loop);
  if (!loop_planner && !f.loop.rivals.empty()) {
    throw InputError("--measure-loop-rivals: only neuroshard_measured has rivals; name it in --algos");
  }
  check_comm_measure_options(f.comm_flags, f.measure_tasks > 0);
  if (f.algorithms.empty()) throw InputError("--algos: names no planner");
}

// The planners' settings, the model every plan is scored by and, for neuroshard_measured, how it measures.
PlannerConfig bench_planner_config(BenchFlags& f, const TaskSet& set) {
  const bool measuring = f.measure_tasks > 0 || f.loop_planner();
  PlannerConfig config;
  config.seed = f.seed;
  f.model = choose_model(f.model, model_use_when_measuring(measuring, f.measure_flags.bench.device), &f.hardware).model;
  std::optional<HardwareProfile> profile;
  if (!f.hardware.empty()) profile = load_hardware_profile(f.hardware);
  config.cost_model = load_model_flag(f.model, set.cluster().devices_per_host, profile ? &*profile : nullptr);
  if (std::string beyond = comm_extrapolation_warning(config.cost_model->hardware(), set.num_devices);
      !beyond.empty()) {
    spdlog::warn("{}", beyond);
  }
  if (measuring) warn_if_measuring_other_hardware(*config.cost_model, f.measure_flags);
  config.neuroshard = f.search;
  if (f.loop_planner()) {
    config.measure_loop = f.loop;
    config.measure_sets = shard_set_measurer(f.measure_flags, measure_loop_trace_seed(f.seed));
  }
  config.torchrec_program = torchrec_program_for(f.algorithms, f.loop.rivals);
  config.global_batch_size = f.measure_flags.bench.batch_size;
  return config;
}

// How --measure measures: the bench's own progress covers it. After Ctrl-C, devices not reached come back
// unmeasured, and their tasks drop out of the measured means.
BenchMeasure bench_measure(const BenchFlags& f) {
  BenchMeasure measure;
  measure.tasks = f.measure_tasks;
  if (f.measure_tasks > 0) measure.measure_sets = shard_set_measurer(f.measure_flags, f.seed);
  if (f.comm_flags.enabled) {
    measure.time_comm = comm_timer_on_this_host(f.comm_flags, f.log_options.quiet, "shard-plan bench --measure-comm");
    measure.comm_batch_size = f.comm_flags.batch_size;
  }
  return measure;
}

// run_bench, with a planner it does not know named by bench's flag (--algos; main would name plan's --algo).
BenchResult bench_tasks(const TaskSet& set, const BenchFlags& f, const PlannerConfig& config,
                        const BenchMeasure& measure) {
  try {
    return run_bench(set, f.algorithms, config, f.log_options.quiet, &measure);
  } catch (const SettingError& e) {
    if (e.setting() != "planner") throw;
    throw InputError(fmt::format("--algos: {}", e.rule()));
  }
}

int run_bench_command(int argc, char** argv) {
  CLI::App app{
      "Plans every task of a task set with every algorithm and compares them: mean predicted plan cost "
      "(every plan scored by the same model), valid plans, median and max planning seconds, wins.",
      "shard-plan bench"};
  configure_app(app);
  app.footer(R"(Examples:
  shard-plan bench --tasks data/tasks/paper-4gpu.json
  shard-plan bench --tasks data/tasks/all-128gpu.json --algos neuroshard,torchrec,dim_greedy --json
  shard-plan bench --tasks data/tasks/paper-4gpu.json --measure 10
  shard-plan bench --tasks data/tasks/paper-8gpu.json --measure 10 --measure-comm
  shard-plan bench --tasks data/tasks/paper-4gpu.json --algos neuroshard_measured,neuroshard,torchrec --measure 20

--measure N runs every device of the first N tasks' plans on this machine's device (the kernel and traces
of collect-costs, one device at a time) and compares the plans' measured max compute. A task's plans are
measured together: devices with the same shards are measured once for all of them, in --measure-rounds
interleaved rounds of fresh builds, keeping the fastest. With --measure-comm, each measured plan's
collectives (its all-to-all, row-wise tables' reduce-scatter and all-gather, data-parallel gradients'
all-reduce) are then timed across ranks on this host (collect-costs comm --spawn --workloads: one process
per GPU, each starting when its measured compute ends) and the whole step, compute plus collectives, is
compared too. Measure on an idle machine: other work only adds time.

neuroshard_measured (only when named in --algos) is neuroshard with measured-in-the-loop planning: it
measures up to --measure-loop shard sets per task on this machine's device while planning, with traces of
its own, so --measure judges its plans on fresh measurements; its planning time includes them.)");
  BenchFlags f;
  add_bench_command_options(app, f);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(f.log_options);
  check_bench_flags(f);

  TaskSet set = load_task_set(f.tasks_path);
  PlannerConfig config = bench_planner_config(f, set);
  spdlog::info("{}: {} tasks on {} GPUs, {} algorithms", f.tasks_path, set.tasks.size(), set.num_devices,
               f.algorithms.size());
  BenchMeasure measure = bench_measure(f);
  BenchResult result = bench_tasks(set, f, config, measure);
  if (f.json) {
    std::cout << bench_to_json(result, f.per_task).dump(2) << "\n";
  } else {
    std::cout << format_bench(result);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(bench, "bench", "compare planners on a task set", run_bench_command);

}  // namespace shardplan::cli
