// shard-plan evaluate --plan P --tables T [--measure]: a plan's per-device predicted costs and, with
// --measure, each device's shard set timed on this machine next to the prediction.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "comm_measure.hpp"
#include "commands.hpp"
#include "planning_flags.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/report/evaluate.hpp"

namespace shardplan::cli {

namespace {

// Each device's shard set timed here, next to its prediction; with --measure-comm, the plan's collectives too.
void measure_evaluated_plan(PlanEvaluation& evaluation, const Plan& plan, const std::vector<Table>& tables,
                            const MeasureFlags& measure_flags, const CommMeasureFlags& comm_flags, uint64_t seed,
                            bool quiet) {
  const ComputeBenchConfig& bench = measure_flags.bench;
  spdlog::info("measuring {} devices on {} (batch {}, {} timed steps, {} rounds)", plan.cluster.num_devices,
               bench.device, bench.batch_size, bench.timed_iterations, measure_flags.rounds);
  PlanMeasurement measured = measure_on_this_machine(measure_flags, {&plan}, tables, seed, quiet).front();
  attach_measurements(evaluation, measured.compute_ms, measured.skipped);
  if (measured.interrupted) spdlog::warn("interrupted: the devices not reached are reported as not measured");
  if (!comm_flags.enabled) return;
  const std::optional<CommToMeasure> comm = comm_to_measure(plan, measured.compute_ms);
  if (!comm) {
    spdlog::warn("--measure-comm: not every device's compute was measured, so the collectives are not timed");
    return;
  }
  CommTimer timer = comm_timer_on_this_host(comm_flags, quiet, "shard-plan evaluate --measure-comm");
  if (auto timed = timer({*comm}, comm_flags.batch_size).front()) attach_comm_measurements(evaluation, *timed);
}

constexpr const char* kFooter = R"(Examples:
  shard-plan evaluate --plan plan.json --tables data/examples/tables.json
  shard-plan evaluate --plan plan.json --tables tables.json --measure --json > evaluation.json
  shard-plan evaluate --plan plan.json --tables tables.json --measure --measure-comm

Measured compute is the fastest of --measure-iterations timed training steps (forward, backward, sparse
SGD update) over --measure-rounds fresh builds of each device's shards, the statistic the bundled model
is trained on; it describes this machine's device, which is the device the model describes only when the
model was pre-trained on costs collected here. --measure-comm then times the plan's collectives across
ranks on this host (all-to-all, row-wise reduce-scatter and all-gather, data-parallel all-reduce) (one process per GPU, each starting when its measured compute ends; the protocol of
collect-costs comm) and shows each device's measured step.
Exit codes: 0 success, 1 runtime failure, 2 bad usage, unreadable input or an invalid plan.)";

int run_evaluate(int argc, char** argv) {
  CLI::App app{
      "Scores a plan (written by shard-plan or any tool, in the shard-plan/1 format) with a cost model: "
      "per device the predicted compute, forward and backward all-to-all and total. With --measure, each "
      "device's shards also run on this machine's device, one device at a time, with the kernel and "
      "index traces collect-costs uses, and measured compute is shown against the prediction.",
      "shard-plan evaluate"};
  configure_app(app);
  app.footer(kFooter);
  std::string plan_path;
  std::string tables_path;
  std::string model;
  bool measure = false;
  bool json = false;
  uint64_t seed = 0;
  MeasureFlags measure_flags;
  CommMeasureFlags comm_flags;
  LogOptions log_options;
  app.add_option("--plan", plan_path, "Plan file (format shard-plan/1)")->required();
  app.add_option("--tables", tables_path, "The tables file the plan was made for")->required();
  add_model_option(app, model);
  app.add_flag("--measure", measure, "Also time each device's shard set on this machine's device");
  app.add_flag("--json", json, "Print the evaluation as JSON on stdout");
  add_seed_option(app, seed, "Seed of the measured index traces");
  add_measure_options(app, measure_flags);
  add_comm_measure_options(app, comm_flags);
  std::string hardware;
  add_hardware_option(app, hardware);
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  check_measure_options(measure_flags, measure);
  check_comm_measure_options(comm_flags, measure);

  std::vector<Table> tables = load_tables(tables_path);
  Plan plan = read_plan_file(plan_path, tables);
  // The plan's own profile unless --hardware names another (or, with none, the default model's).
  std::string profile_name = hardware.empty() ? plan.cluster.hardware : hardware;
  model = choose_model(model, model_use_when_measuring(measure, measure_flags.bench.device), &profile_name).model;
  std::optional<HardwareProfile> profile;
  if (!profile_name.empty()) profile = load_hardware_profile(profile_name);
  auto cost_model = load_model_flag(model, plan.cluster.devices_per_host, profile ? &*profile : nullptr);
  PlanEvaluation evaluation = evaluate_plan(plan, tables, *cost_model);
  if (measure) {
    warn_if_measuring_other_hardware(*cost_model, measure_flags);
    measure_evaluated_plan(evaluation, plan, tables, measure_flags, comm_flags, seed, log_options.quiet);
  }

  if (json) {
    std::cout << evaluation_to_json(evaluation).dump(2) << "\n";
  } else {
    std::cout << format_evaluation(evaluation);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(evaluate, "evaluate", "score a plan with a cost model, and measure it with --measure",
                           run_evaluate);

}  // namespace shardplan::cli
