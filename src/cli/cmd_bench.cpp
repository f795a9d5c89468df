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
  LogOptions log_options;
  app.add_option("--tasks", tasks_path, "Task set file (gen-tasks writes them; data/tasks/ has the benchmark's)")
      ->required();
  app.add_option("--algos", algorithms, "Comma-separated planners")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed for randomised planners")->capture_default_str();
  app.add_flag("--json", json, "Print the results as JSON on stdout");
  app.add_flag("--per-task", per_task, "With --json, list every task's cost per algorithm");
  add_model_option(app, model);
  add_search_options(app, search);
  app.add_option("--measure", measure_tasks, "Also measure the plans of the first N tasks on this machine's device")
      ->capture_default_str();
  add_measure_options(app, measure_flags);
  app.add_option("--measure-loop", loop.budget, "Shard sets neuroshard_measured may measure per task while planning")
      ->capture_default_str();
  add_measure_loop_options(app, loop);
  add_comm_measure_options(app, comm_flags);
  std::string hardware;
  add_hardware_option(app, hardware);
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  if (measure_tasks < 0) throw InputError(fmt::format("--measure: must be 0 or more tasks, got {}", measure_tasks));
  const bool loop_planner = std::find(algorithms.begin(), algorithms.end(), "neuroshard_measured") != algorithms.end();
  check_measure_options(measure_flags, measure_tasks > 0 || loop_planner);
  if (loop_planner) validate_measure_loop_config(loop);
  if (!loop_planner && !loop.rivals.empty()) {
    throw InputError("--measure-loop-rivals: only neuroshard_measured has rivals; name it in --algos");
  }
  check_comm_measure_options(comm_flags, measure_tasks > 0);

  if (algorithms.empty()) throw InputError("--algos: names no planner");
  TaskSet set = load_task_set(tasks_path);
  PlannerConfig config;
  config.seed = seed;
  model = choose_model(model, model_use_when_measuring(measure_tasks > 0 || loop_planner, measure_flags.bench.device),
                       &hardware)
              .model;
  std::optional<HardwareProfile> profile;
  if (!hardware.empty()) profile = load_hardware_profile(hardware);
  config.cost_model = load_model_flag(model, set.cluster().devices_per_host, profile ? &*profile : nullptr);
  if (std::string beyond = comm_extrapolation_warning(config.cost_model->hardware(), set.num_devices);
      !beyond.empty()) {
    spdlog::warn("{}", beyond);
  }
  if (measure_tasks > 0 || loop_planner) warn_if_measuring_other_hardware(*config.cost_model, measure_flags);
  config.neuroshard = search;
  if (loop_planner) {
    config.measure_loop = loop;
    config.measure_sets = shard_set_measurer(measure_flags, measure_loop_trace_seed(seed));
  }
  config.torchrec_program = torchrec_program_for(algorithms);
  config.global_batch_size = measure_flags.bench.batch_size;
  spdlog::info("{}: {} tasks on {} GPUs, {} algorithms", tasks_path, set.tasks.size(), set.num_devices,
               algorithms.size());
  // The bench's own progress covers the measurement. After Ctrl-C, devices not reached come back
  // unmeasured, and their tasks drop out of the measured means.
  BenchMeasure measure;
  measure.tasks = measure_tasks;
  if (measure_tasks > 0) measure.measure_sets = shard_set_measurer(measure_flags, seed);
  if (comm_flags.enabled) {
    measure.time_comm = comm_timer_on_this_host(comm_flags, log_options.quiet, "shard-plan bench --measure-comm");
    measure.comm_batch_size = comm_flags.batch_size;
  }
  BenchResult result = run_bench(set, algorithms, config, log_options.quiet, &measure);
  if (json) {
    std::cout << bench_to_json(result, per_task).dump(2) << "\n";
  } else {
    std::cout << format_bench(result);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(bench, "bench", "compare planners on a task set", run_bench_command);

}  // namespace shardplan::cli
