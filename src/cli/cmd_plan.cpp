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
#include "replan_flags.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/process_clock.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/version.hpp"
#include "shardplan/planners/baseline_comparison.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/report/bounding_drivers.hpp"
#include "shardplan/report/cached_tables.hpp"
#include "shardplan/report/report.hpp"
#include "shardplan/report/svg_report.hpp"
#include "shardplan/search/replan.hpp"
#if SHARDPLAN_WITH_TORCH
#include "shardplan/torch/comm_benchmark.hpp"
#include "shardplan/torch/compute_benchmark.hpp"
#endif

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
                        const std::string& model, const std::string& hardware, const std::string& old_plan) {
  std::vector<LabelledPath> inputs = {{"--tables", tables_path}};
  if (!old_plan.empty()) inputs.push_back({"--from", old_plan});
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
  analysis.cached = describe_cached_tables(plan, tables, *config.cost_model);
  if (compare) {
    // What the plan's baseline starts planned already is not planned again.
    const std::vector<BaselineOutcome> known = plan.search ? plan.search->baselines : std::vector<BaselineOutcome>{};
    analysis.baselines =
        compare_with_baselines(baseline_planner_names(), tables, cluster, config, *config.cost_model, known);
  }
  return analysis;
}

struct PlanFlags {
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
  ReplanFlags replan;
  LogOptions log_options;
};

void add_plan_options(CLI::App& app, PlanFlags& f) {
  app.add_option("--tables", f.tables_path, "Tables file: a JSON array of tables or {\"tables\": [...]}")->required();
  add_cluster_options(app, f.cluster_flags, /*gpus_required=*/true);
  app.add_option("--algo", f.algorithm, "Planner: " + planners_help())->capture_default_str();
  add_seed_option(app, f.seed, "Seed for randomised planners; same input and seed give the same plan");
  app.add_option("-o,--output", f.output, "Plan file to write ('-': JSON to stdout, report to stderr)")
      ->capture_default_str();
  add_model_option(app, f.model);
  add_search_options(app, f.search);
  const char* loop_group = "Measured-in-the-loop planning";
  app.add_option("--measure-loop", f.measure_loop,
                 "Measure up to N shard sets on this machine's device while searching: the sets that bound the best "
                 "plans correct the model for the rest of the search, and the final choice among the search's best "
                 "plans is made on measured compute (neuroshard only; plans then depend on the measurements)")
      ->capture_default_str()
      ->group(loop_group);
  add_measure_loop_options(app, f.loop);
  add_measure_options(app, f.measure_flags);
  add_replan_options(app, f.replan);
  app.add_flag("--full-report", f.full_report, "List every device in the report, however many");
  app.add_option("--report", f.chart_path,
                 "Also draw the plan as an SVG chart: per-device predicted cost and memory against capacity")
      ->type_name("FILE.svg");
  app.add_flag("--no-compare", f.no_compare,
               fmt::format("Do not plan with the baselines ({}) to compare with a neuroshard plan",
                           fmt::join(baseline_planner_names(), ", ")));
  add_log_options(app, f.log_options);
}

// --measure-loop N makes the planner neuroshard_measured; returns whether it measures.
bool check_measure_loop_flags(PlanFlags& f) {
  if (f.measure_loop < 0)
    throw InputError(fmt::format("--measure-loop: must be 0 (off) or more shard sets, got {}", f.measure_loop));
  if (f.measure_loop > 0) {
    if (f.algorithm != kDefaultAlgorithm && f.algorithm != kMeasuredAlgorithm) {
      throw InputError(fmt::format("--measure-loop: only the neuroshard search measures while planning, not --algo {}",
                                   f.algorithm));
    }
    f.algorithm = kMeasuredAlgorithm;
    f.loop.budget = f.measure_loop;
  }
  const bool measuring = f.algorithm == kMeasuredAlgorithm;
  if (!measuring && !f.loop.rivals.empty()) {
    throw InputError("--measure-loop-rivals: only measured-in-the-loop planning has rivals; add --measure-loop N");
  }
  check_measure_options(f.measure_flags, measuring);
  if (measuring) validate_measure_loop_config(f.loop);
  return measuring;
}

// Everything the flags alone decide, before any file is read: the model, the outputs, the loop.
ModelChoice check_plan_flags(PlanFlags& f) {
  const bool loop_measures = f.measure_loop > 0 || f.algorithm == kMeasuredAlgorithm;
  const ModelChoice model_choice = choose_model(
      f.model, model_use_when_measuring(loop_measures, f.measure_flags.bench.device), &f.cluster_flags.hardware);
  f.model = model_choice.model;
  if (!f.chart_path.empty()) check_chart_path(f.chart_path);
  check_plan_outputs(f.output, f.chart_path, f.tables_path, f.model, f.cluster_flags.hardware, f.replan.from);
  const bool measuring = check_measure_loop_flags(f);
  check_replan_flags(f.replan, f.algorithm, kDefaultAlgorithm, measuring);
  return model_choice;
}

// A cost model is true for the hardware it was measured on: more GPUs, another GPU or another host layout
// than that are warned of.
void warn_where_the_model_was_not_measured(const ModelHardware& model, const Cluster& cluster,
                                           const std::string& device_model) {
  for (const std::string& why :
       {comm_extrapolation_warning(model, cluster.num_devices), device_model_warning(model, device_model),
        host_layout_warning(model, cluster.devices_per_host)}) {
    if (!why.empty()) spdlog::warn("{}", why);
  }
}

PlannerConfig planner_config(PlanFlags& f, const Cluster& cluster, const std::optional<HardwareProfile>& hardware) {
  PlannerConfig config;
  config.seed = f.seed;
  config.cost_model = load_model_flag(f.model, cluster.devices_per_host, hardware ? &*hardware : nullptr);
  const std::string& device_model =
      f.cluster_flags.device_model.empty() && hardware ? hardware->device_model : f.cluster_flags.device_model;
  warn_where_the_model_was_not_measured(config.cost_model->hardware(), cluster, device_model);
  f.search.show_progress = !f.log_options.quiet;
  config.neuroshard = f.search;
  if (f.algorithm == kMeasuredAlgorithm) {
    config.measure_loop = f.loop;
    config.measure_sets = shard_set_measurer(f.measure_flags, measure_loop_trace_seed(f.seed));
    warn_if_measuring_other_hardware(*config.cost_model, f.measure_flags);
  }
  config.torchrec_program = torchrec_program_for({f.algorithm}, f.loop.rivals);
  config.global_batch_size = f.measure_flags.bench.batch_size;
  return config;
}

// The plan with its seed, planning time and the model's per-device costs, as every plan is written.
Plan scored(Plan plan, const std::vector<Table>& tables, const PlannerConfig& config,
            std::chrono::steady_clock::time_point start) {
  plan.seed = config.seed;
  plan.planning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  plan.device_costs = score_plan(plan, tables, *config.cost_model);
  plan.cost_model = config.cost_model->name();
  plan.cost_model_hardware = config.cost_model->hardware();
  return plan;
}

// The planner's plan, checked against the tables' constraints and scored by the model every planner's plan
// is scored by, so reports compare like with like.
Plan make_plan(const std::string& algorithm, const std::vector<Table>& tables, const Cluster& cluster,
               const PlannerConfig& config) {
  auto planner = make_planner(algorithm, config);
  auto start = std::chrono::steady_clock::now();
  Plan plan = planner->plan(tables, cluster);
  // Every planner honours the tables' constraints; a plan that does not is a bug, never a plan to write.
  if (std::string broken = constraint_violation(plan, tables); !broken.empty()) {
    throw RuntimeFailure(fmt::format("{}: its plan breaks the tables file's constraints: {}", algorithm, broken));
  }
  return scored(std::move(plan), tables, config, start);
}

// The old plan's placement under the new tables, changed by the moves worth their bytes within the budget;
// scored and checked as make_plan's plans are.
Plan make_replan(const PlanFlags& f, const std::vector<Table>& tables, const Cluster& cluster,
                 const PlannerConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  const Plan old_plan = read_plan_file_alone(f.replan.from);
  ReplanConfig replan_config;
  replan_config.from = f.replan.from;
  replan_config.move_budget_bytes = move_budget_bytes(f.replan.move_budget, tables, cluster.optimizer);
  replan_config.sharding_types = f.search.sharding_types;
  replan_config.threads = f.search.threads;
  replan_config.keep_shapes = f.replan.keep_shapes;
  replan_config.deadline = Deadline::after(f.search.time_limit_seconds, *f.search.time_limit_start);
  check_table_constraints(tables, cluster.num_devices, f.search.sharding_types);
  Plan plan = replan(old_plan, tables, cluster, *config.cost_model, replan_config);
  if (std::string broken = constraint_violation(plan, tables); !broken.empty()) {
    throw InputError(
        fmt::format("--from {}: the old plan's placement breaks the tables file's constraints: {} (plan "
                    "afresh, without --from)",
                    f.replan.from, broken));
  }
  return scored(std::move(plan), tables, config, start);
}

// The plan file and chart, staged before either is written: a run that fails leaves neither, and an old
// plan whole. Then the report.
void write_plan(const Plan& plan, const PlanAnalysis& analysis, const PlanFlags& f, const ModelChoice& model_choice) {
  const bool plan_on_stdout = resolve_output(f.output).kind == OutputTarget::Kind::kStandardOutput;
  OutputFiles outputs;
  outputs.stage(f.output, plan_to_string(plan));
  if (!f.chart_path.empty()) outputs.stage(f.chart_path, render_svg_report(plan, analysis));
  outputs.commit();
  if (!plan_on_stdout) spdlog::info("wrote {}", f.output);
  if (!f.chart_path.empty()) spdlog::info("wrote {}", f.chart_path);
  if (!f.log_options.quiet) {
    ReportOptions options;
    options.full = f.full_report;
    options.model_by_default = model_choice.by_default;
    options.full_report = "--full-report";
    options.without_baseline_starts = "--no-baseline-starts";
    std::string report = format_report(plan, options, analysis);
    (plan_on_stdout ? std::cerr : std::cout) << report << std::flush;
  }
}

// What follows the search within --time-limit: the type pass's end, scoring, the report's analysis and
// writing the plan and exiting. On the 2-core VM that took 0.47 s for 20,000 tables on 4,096 GPUs and 2.0 s
// for 100,000 (docs/planning.md#the-time-limit): 0.15 s and 20 us per table and per GPU cover both.
double finishing_seconds(std::size_t tables, int devices) {
  constexpr double kFixed = 0.15;
  constexpr double kPerItem = 20e-6;
  return kFixed + kPerItem * (static_cast<double>(tables) + static_cast<double>(devices));
}

// A limit shorter than a first plan takes (start-up, reading, one placement, writing) is overrun: say so.
void warn_past_the_limit(double limit, std::size_t tables, int devices) {
  if (limit <= 0.0) return;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start_time()).count();
  if (took > limit + std::max(0.1 * limit, 0.3)) {
    spdlog::warn("--time-limit {:g}: this run took {:.2f} s, what a first plan of {} tables on {} GPUs needs here",
                 limit, took, tables, devices);
  }
}

// --version: the version, then what this build links and can measure with.
std::string version_text() {
#if SHARDPLAN_WITH_TORCH
  std::vector<std::string> backends = compiled_comm_backends();
  return fmt::format("shard-plan {}\nLibTorch {}; all-to-all collectors: {}", kVersion, torch_version(),
                     backends.empty() ? "none" : fmt::format("{}", fmt::join(backends, ", ")));
#else
  return fmt::format("shard-plan {}\nwithout LibTorch (the analytic cost model only)", kVersion);
#endif
}

}  // namespace

int run_plan(int argc, char** argv) {
  CLI::App app{"Plans how a DLRM's embedding tables are sharded across GPUs and writes the plan as JSON.",
               "shard-plan"};
  configure_app(app);
  app.set_version_flag("--version", version_text());
  app.footer(footer());
  PlanFlags f;
  add_plan_options(app, f);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  // --time-limit bounds the whole run: starting the process and reading the tables and model count.
  f.search.time_limit_start = process_start_time();
  apply_log_options(f.log_options);
  const ModelChoice model_choice = check_plan_flags(f);

  std::optional<HardwareProfile> hardware;
  Cluster cluster = cluster_from_flags(f.cluster_flags, &hardware);
  std::vector<Table> tables = load_tables(f.tables_path);
  spdlog::info("read {} tables from {}", tables.size(), f.tables_path);
  // ... and so does what follows the search: its clock starts that much earlier.
  *f.search.time_limit_start -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(finishing_seconds(tables.size(), cluster.num_devices)));
  PlannerConfig config = planner_config(f, cluster, hardware);
  const Plan plan =
      f.replan.from.empty() ? make_plan(f.algorithm, tables, cluster, config) : make_replan(f, tables, cluster, config);

  PlanAnalysis analysis;
  if (!f.log_options.quiet || !f.chart_path.empty()) {
    // The baselines get what is left of the time limit.
    config.deadline = Deadline::after(f.search.time_limit_seconds, *f.search.time_limit_start);
    // A replan is compared with its old placement (the report's replan lines), not with fresh plans.
    const bool compare = (f.algorithm == kDefaultAlgorithm || f.algorithm == kMeasuredAlgorithm) && !f.no_compare &&
                         f.replan.from.empty();
    analysis = analyse_plan(plan, tables, cluster, config, compare);
  }
  write_plan(plan, analysis, f, model_choice);
  warn_past_the_limit(f.search.time_limit_seconds, tables.size(), cluster.num_devices);
  return 0;
}

SHARDPLAN_REGISTER_COMMAND(plan, "plan", "plan the tables (the default command)", run_plan);

}  // namespace shardplan::cli
