// shard-plan evaluate --plan P --tables T [--measure]: a plan's per-device predicted costs and, with
// --measure, each device's shard set timed on this machine next to the prediction.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <limits>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "comm_measure.hpp"
#include "commands.hpp"
#include "planning_flags.hpp"
#include "shardplan/core/plan_moves.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/report/evaluate.hpp"
#include "shardplan/report/replan_report.hpp"
#include "shardplan/search/replan.hpp"

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

// The old plan's placement under these tables (new tables placed, room made where it no longer fits), as
// a replan with no moves of its own makes it: what `plan --from OLD --move-budget 0` starts from.
struct OldPlacement {
  PlanEvaluation evaluation;
  PlanMoves moves;  // from it to the evaluated plan
};

OldPlacement evaluate_old_placement(const std::string& old_path, const Plan& plan, const std::vector<Table>& tables,
                                    const CostModel& model) {
  const Plan old_plan = read_plan_file_alone(old_path);
  ReplanConfig config;
  config.from = old_path;
  config.move_budget_bytes = std::numeric_limits<int64_t>::max();  // room made whatever it moves
  config.max_moves = 0;
  config.keep_shapes = true;  // and no sharding-type pass
  const Plan placement = replan(old_plan, tables, plan.cluster, model, config);
  return OldPlacement{evaluate_plan(placement, tables, model), plan_moves(old_plan, plan, plan.cluster.optimizer)};
}

constexpr const char* kFooter = R"(Examples:
  shard-plan evaluate --plan plan.json --tables data/examples/tables.json
  shard-plan evaluate --plan plan.json --tables tables.json --measure --json > evaluation.json
  shard-plan evaluate --plan plan.json --tables tables.json --measure --measure-comm
  shard-plan evaluate --plan new.json --tables tables.json --from old.json   (a replan beside its old plan)

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
  std::string old_plan_path;
  app.add_option("--from", old_plan_path,
                 "Also score this old plan's placement under these tables (new tables placed where the model "
                 "prefers) and show it beside the plan, with the bytes the plan moved from it")
      ->type_name("OLD_PLAN");
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

  std::optional<OldPlacement> old;
  if (!old_plan_path.empty()) old = evaluate_old_placement(old_plan_path, plan, tables, *cost_model);
  if (json) {
    nlohmann::ordered_json doc = evaluation_to_json(evaluation);
    if (old) doc["old_placement"] = side_by_side_to_json(old->evaluation, old->moves);
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << format_evaluation(evaluation);
    if (old) std::cout << format_side_by_side(old->evaluation, evaluation, old->moves);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(evaluate, "evaluate", "score a plan with a cost model, and measure it with --measure",
                           run_evaluate);

}  // namespace shardplan::cli
