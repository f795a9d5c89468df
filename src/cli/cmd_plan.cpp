// shard-plan [plan] --tables T --gpus N: read tables, plan, write the plan JSON, print the report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "planning_flags.hpp"
#include "python_stack.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/process_clock.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/version.hpp"
#include "shardplan/planners/baseline_comparison.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/report/bounding_drivers.hpp"
#include "shardplan/report/report.hpp"
#include "shardplan/report/svg_report.hpp"

namespace shardplan::cli {

namespace {

constexpr const char* kDefaultAlgorithm = "neuroshard";
constexpr const char* kMeasuredAlgorithm = "neuroshard_measured";

std::string footer() {
  std::string text =
      "Example:\n"
      "  shard-plan --tables data/examples/tables.json --gpus 128 --mem-per-gpu 80GiB -o plan.json\n\n"
      "Commands (each has --help; with none, shard-plan plans):\n";
  for (const auto& command : registered_commands()) {
    text += fmt::format("  {:<22}{}\n", command.name, command.summary);
  }
  text += "\nExit codes: 0 success, 1 runtime failure, 2 bad usage or input, 3 infeasible (the tables cannot fit).";
  return text;
}

// Refused before planning, so a typo costs no search. Only SVG is written (see svg_report.hpp).
void check_chart_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension != ".svg") {
    throw InputError(fmt::format("--report {}: the chart is written as SVG; give a file name ending in .svg", path));
  }
}

// Every output path checked against the others and against every file the run reads, before any work.
void check_plan_outputs(const std::string& output, const std::string& chart_path, const std::string& tables_path,
                        const std::string& model, const std::string& hardware) {
  std::vector<LabelledPath> inputs = {{"--tables", tables_path}};
  for (LabelledPath& file : model_flag_inputs(model)) inputs.push_back(std::move(file));
  if (!hardware.empty()) inputs.push_back({"--hardware", hardware_profile_path(hardware)});
  std::vector<LabelledPath> outputs = {{"-o", output}};
  if (!chart_path.empty()) outputs.push_back({"--report", chart_path});
  check_output_files(outputs, inputs);
}

// What the report and the chart say beyond the plan: the step's bounding device and, when asked, the
// baselines (each started only while config.deadline has not passed).
PlanAnalysis analyse_plan(const Plan& plan, const std::vector<Table>& tables, const Cluster& cluster,
                          const PlannerConfig& config, bool compare) {
  PlanAnalysis analysis;
  analysis.bound = bounding_drivers(plan, tables, *config.cost_model);
  if (compare) {
    // What the plan's baseline starts planned already is not planned again.
    const std::vector<BaselineOutcome> known = plan.search ? plan.search->baselines : std::vector<BaselineOutcome>{};
    analysis.baselines =
        compare_with_baselines(baseline_planner_names(), tables, cluster, config, *config.cost_model, known);
  }
  return analysis;
}

}  // namespace

int run_plan(int argc, char** argv) {
  CLI::App app{"Plans how a DLRM's embedding tables are sharded across GPUs and writes the plan as JSON.",
               "shard-plan"};
  configure_app(app);
  app.set_version_flag("--version", kVersion);
  app.footer(footer());
  std::string tables_path;
  std::string output = "plan.json";
  std::string algorithm = kDefaultAlgorithm;
  uint64_t seed = 0;
  bool full_report = false;
  std::string chart_path;
  bool no_compare = false;
  std::string model;
  NeuroShardConfig search;
  int measure_loop = 0;
  MeasureLoopConfig loop;
  MeasureFlags measure_flags;
  ClusterFlags cluster_flags;
  LogOptions log_options;
  app.add_option("--tables", tables_path, "Tables file: a JSON array of tables or {\"tables\": [...]}")->required();
  add_cluster_options(app, cluster_flags, /*gpus_required=*/true);
  app.add_option("--algo", algorithm,
                 fmt::format("Planner: {}; {} (what --measure-loop runs)", fmt::join(planner_names(), ", "),
                             fmt::join(measuring_planner_names(), ", ")))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed for randomised planners; same input and seed give the same plan")
      ->capture_default_str();
  app.add_option("-o,--output", output, "Plan file to write ('-': JSON to stdout, report to stderr)")
      ->capture_default_str();
  add_model_option(app, model);
  add_search_options(app, search);
  const char* loop_group = "Measured-in-the-loop planning";
  app.add_option("--measure-loop", measure_loop,
                 "Measure up to N shard sets on this machine's device while searching: the sets that bound the best "
                 "plans correct the model for the rest of the search, and the final choice among the search's best "
                 "plans is made on measured compute (neuroshard only; plans then depend on the measurements)")
      ->capture_default_str()
      ->group(loop_group);
  add_measure_loop_options(app, loop);
  add_measure_options(app, measure_flags);
  app.add_flag("--full-report", full_report, "List every device in the report, however many");
  app.add_option("--report", chart_path,
                 "Also draw the plan as an SVG chart: per-device predicted cost and memory against capacity")
      ->type_name("FILE.svg");
  app.add_flag("--no-compare", no_compare,
               fmt::format("Do not plan with the baselines ({}) to compare with a neuroshard plan",
                           fmt::join(baseline_planner_names(), ", ")));
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  // --time-limit bounds the whole run: starting the process and reading the tables and model count.
  search.time_limit_start = process_start_time();
  apply_log_options(log_options);
  const bool loop_measures = measure_loop > 0 || algorithm == kMeasuredAlgorithm;
  const ModelChoice model_choice =
      choose_model(model, model_use_when_measuring(loop_measures, measure_flags.bench.device), &cluster_flags.hardware);
  model = model_choice.model;
  if (!chart_path.empty()) check_chart_path(chart_path);
  check_plan_outputs(output, chart_path, tables_path, model, cluster_flags.hardware);
  const bool plan_on_stdout = resolve_output(output).kind == OutputTarget::Kind::kStandardOutput;
  if (measure_loop < 0)
    throw InputError(fmt::format("--measure-loop: must be 0 (off) or more shard sets, got {}", measure_loop));
  if (measure_loop > 0) {
    if (algorithm != kDefaultAlgorithm && algorithm != kMeasuredAlgorithm) {
      throw InputError(
          fmt::format("--measure-loop: only the neuroshard search measures while planning, not --algo {}", algorithm));
    }
    algorithm = kMeasuredAlgorithm;
    loop.budget = measure_loop;
  }
  const bool measuring = algorithm == kMeasuredAlgorithm;
  if (!measuring && !loop.rivals.empty()) {
    throw InputError("--measure-loop-rivals: only measured-in-the-loop planning has rivals; add --measure-loop N");
  }
  check_measure_options(measure_flags, measuring);
  if (measuring) validate_measure_loop_config(loop);

  std::optional<HardwareProfile> hardware;
  Cluster cluster = cluster_from_flags(cluster_flags, &hardware);
  std::vector<Table> tables = load_tables(tables_path);
  spdlog::info("read {} tables from {}", tables.size(), tables_path);
  PlannerConfig config;
  config.seed = seed;
  config.cost_model = load_model_flag(model, cluster.devices_per_host, hardware ? &*hardware : nullptr);
  if (std::string beyond = comm_extrapolation_warning(config.cost_model->hardware(), cluster.num_devices);
      !beyond.empty()) {
    spdlog::warn("{}", beyond);
  }
  search.show_progress = !log_options.quiet;
  config.neuroshard = search;
  if (measuring) {
    config.measure_loop = loop;
    config.measure_sets = shard_set_measurer(measure_flags, measure_loop_trace_seed(seed));
    warn_if_measuring_other_hardware(*config.cost_model, measure_flags);
  }
  config.torchrec_program = torchrec_program_for({algorithm});
  config.global_batch_size = measure_flags.bench.batch_size;
  auto planner = make_planner(algorithm, config);

  auto start = std::chrono::steady_clock::now();
  Plan plan = planner->plan(tables, cluster);
  // Every planner honours the tables' constraints; a plan that does not is a bug, never a plan to write.
  if (std::string broken = constraint_violation(plan, tables); !broken.empty()) {
    throw RuntimeFailure(fmt::format("{}: its plan breaks the tables file's constraints: {}", algorithm, broken));
  }
  plan.seed = seed;
  plan.planning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every planner's plan is scored by the same model, so reports compare like with like.
  plan.device_costs = score_plan(plan, tables, *config.cost_model);
  plan.cost_model = config.cost_model->name();
  plan.cost_model_hardware = config.cost_model->hardware();

  PlanAnalysis analysis;
  if (!log_options.quiet || !chart_path.empty()) {
    // The baselines get what is left of the time limit.
    config.deadline = Deadline::after(search.time_limit_seconds, *search.time_limit_start);
    const bool compare = (algorithm == kDefaultAlgorithm || algorithm == kMeasuredAlgorithm) && !no_compare;
    analysis = analyse_plan(plan, tables, cluster, config, compare);
  }
  // Both files are ready before either is written: a run that fails leaves neither, and an old plan whole.
  OutputFiles outputs;
  outputs.stage(output, plan_to_string(plan));
  if (!chart_path.empty()) outputs.stage(chart_path, render_svg_report(plan, analysis));
  outputs.commit();
  if (!plan_on_stdout) spdlog::info("wrote {}", output);
  if (!chart_path.empty()) spdlog::info("wrote {}", chart_path);
  if (!log_options.quiet) {
    std::string report = format_report(plan, ReportOptions{full_report, 32, model_choice.by_default}, analysis);
    (plan_on_stdout ? std::cerr : std::cout) << report << std::flush;
  }
  return 0;
}

SHARDPLAN_REGISTER_COMMAND(plan, "plan", "plan the tables (the default command)", run_plan);

}  // namespace shardplan::cli
