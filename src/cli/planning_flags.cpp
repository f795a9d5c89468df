#include "planning_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/torch/model_files.hpp"

namespace shardplan::cli {

void add_model_option(CLI::App& app, std::string& model) {
  app.add_option("--model", model,
                 fmt::format("Cost model: a directory (pretrain-cost-model and calibrate write one), a bundled "
                             "model's name ({}: an H100; {}: a 2-core VM's CPU), or 'analytic' for TorchRec's "
                             "analytic estimate. Default: $SHARDPLAN_MODEL when set, else {} on {}'s links, or {} "
                             "where this machine's CPU measures",
                             kGpuModelName, kCpuModelName, kGpuModelName, kGpuModelHardware, kCpuModelName))
      ->type_name("DIR|NAME");
}

ModelChoice choose_model(const std::string& model_flag, ModelUse use, std::string* hardware) {
  if (!model_flag.empty()) return {model_flag, false};
  // A pipeline (or a build without LibTorch) sets the model once for every command.
  const char* from_environment = std::getenv("SHARDPLAN_MODEL");
  if (from_environment != nullptr && *from_environment != '\0') return {from_environment, false};
  if (use == ModelUse::kMeasuringThisCpu) {
    spdlog::info("cost model: none named, so the bundled CPU model ({}), since this machine's CPU measures",
                 kCpuModelName);
    return {kCpuModelName, true};
  }
  if (hardware != nullptr && hardware->empty()) *hardware = kGpuModelHardware;
  spdlog::info(
      "cost model: none named, so the bundled GPU model ({}) on {}'s links (--model {}: the 2-core "
      "CPU VM's)",
      kGpuModelName, hardware != nullptr ? *hardware : std::string(kGpuModelHardware), kCpuModelName);
  return {kGpuModelName, true};
}

ModelUse model_use_when_measuring(bool measuring, const std::string& device) {
  return measuring && device == "cpu" ? ModelUse::kMeasuringThisCpu : ModelUse::kPlanningGpus;
}

std::vector<LabelledPath> model_flag_inputs(const std::string& model) {
  if (model == kAnalyticModelName) return {};
  const std::string dir = resolve_model_dir(model);
  if (dir.empty()) return {};
  std::vector<LabelledPath> files;
  for (const std::string& file : model_directory_files(dir)) files.push_back({"--model", file});
  return files;
}

std::shared_ptr<const CostModel> load_model_flag(const std::string& model, int devices_per_host,
                                                 const HardwareProfile* hardware) {
  if (model == kAnalyticModelName) {
    AnalyticCostConfig config;
    config.devices_per_host = devices_per_host;
    if (hardware != nullptr) {
      const CommFabric fabric = fabric_of(*hardware, config.batch_size);
      config.intra_host_bytes_per_ms = fabric.intra_bytes_per_ms;
      config.inter_host_bytes_per_ms = fabric.inter_bytes_per_ms;
    }
    return make_analytic_cost_model(config);
  }
#ifdef SHARDPLAN_WITH_TORCH
  const std::string dir = resolve_model_dir(model);
  std::unique_ptr<NeuralCostModel> loaded = load_cost_model(dir);
  loaded->set_devices_per_host(devices_per_host);
  if (hardware != nullptr) {
    CommFabric fabric = fabric_of(*hardware, 0);
    fabric.devices_per_host = devices_per_host;
    loaded->plan_for_hardware(std::move(fabric));
    spdlog::info("all-to-all for {}: {}", hardware->name,
                 loaded->comm_structure_only()
                     ? "the hierarchical estimate from the profile's figures (the model's comm "
                       "data was measured elsewhere)"
                     : "the model's learned correction on its structure");
  }
  spdlog::info("cost model: {} ({})", loaded->name(), dir);
  return std::shared_ptr<const CostModel>(std::move(loaded));
#else
  throw InputError(
      fmt::format("--model {}: this build has no LibTorch to read model files; use --model analytic", model));
#endif
}

std::string planners_help() {
  return fmt::format(
      "{}; {} (what --measure-loop runs); {} (TorchRec 1.x's own planner, through the Python "
      "stack; _cw32: column-wise shards from 32 columns)",
      fmt::join(planner_names(), ", "), fmt::join(measuring_planner_names(), ", "),
      fmt::join(external_planner_names(), ", "));
}

void add_search_options(CLI::App& app, NeuroShardConfig& config) {
  const char* group = "NeuroShard search";
  app.add_option("--beam-width", config.beam_width, "Plans kept per beam-search step")
      ->capture_default_str()
      ->group(group);
  app.add_option("--candidates", config.candidates,
                 "Split candidates per plan: this many largest by memory plus this many most expensive (and every "
                 "piece on the slowest device)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--steps", config.steps,
                 "Beam-search steps, one column-wise halving each; 0: max(10, min(tables, GPUs))")
      ->capture_default_str()
      ->group(group);
  app.add_option("--patience", config.patience, "Stop after this many steps without a better plan; 0: run every step")
      ->capture_default_str()
      ->group(group);
  app.add_option("--min-gain", config.min_gain,
                 "For --patience, a plan counts as better when its cost is lower by at least this fraction (smaller "
                 "gains are kept but do not extend the search); 0: any gain")
      ->capture_default_str()
      ->group(group);
  app.add_option("--grid-points", config.grid_points, "Width-cap multipliers tried by the greedy grid placement")
      ->capture_default_str()
      ->group(group);
  app.add_option("--grid-min", config.grid_min, "Smallest width-cap multiplier")->capture_default_str()->group(group);
  app.add_option("--grid-max", config.grid_max, "Largest width-cap multiplier")->capture_default_str()->group(group);
  app.add_option("--refine-rounds", config.refine_rounds,
                 "Moves or swaps of pieces off the costliest devices after the search, each lowering the plan's "
                 "cost; 0: none")
      ->capture_default_str()
      ->group(group);
  app.add_option("--time-limit", config.time_limit_seconds,
                 "Seconds the search may take (plan: counted from the process's start, reading the model and tables "
                 "included, and the report's baselines get only what is left; bench: per task); past it, the best "
                 "plan found so far is returned, marked cut short in the plan file and report; 0: no limit")
      ->capture_default_str()
      ->group(group);
  app.add_option("--threads", config.threads, "Search threads; 0: every core (plans do not depend on it)")
      ->capture_default_str()
      ->group(group);
  app.add_option_function<std::string>(
         "--sharding-types",
         [&config](const std::string& list) { config.sharding_types = parse_sharding_types(list, "--sharding-types"); },
         "Sharding types the plan may use, TorchRec's names comma-separated (must include table_wise), or all: "
         "table_wise, column_wise, row_wise, table_row_wise, data_parallel; TorchRec's planners keep to them too "
         "(docs/sharding-types.md)")
      ->default_str("all")
      ->group(group);
  app.add_flag_function(
         "--no-baseline-starts", [&config](std::int64_t) { config.baseline_starts = false; },
         "Return the search's own plan even where a baseline's (after the sharding-type pass) scores better, and "
         "refuse what the search cannot place; by default the baselines' plans are other starting points")
      ->group(group);
  app.add_option("--type-moves", config.type_moves,
                 "Changes the sharding-type pass may make after the search (conversions to row-wise, table-row-wise "
                 "or data-parallel, and moves of shards off the slowest device); 0: none")
      ->capture_default_str()
      ->group(group);
}

}  // namespace shardplan::cli
