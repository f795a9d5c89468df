#pragma once
// Flags shared by the commands that plan or score plans (plan, bench, evaluate): the cost model and the
// NeuroShard search parameters.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/search/neuroshard_config.hpp"

namespace shardplan::cli {

inline constexpr const char* kAnalyticModelName = "analytic";

// --model DIR|NAME|analytic (default: the bundled model for what the command does, choose_model).
void add_model_option(CLI::App& app, std::string& model);

// What a command does with its model, which decides the bundled model it uses when none is named.
enum class ModelUse {
  kPlanningGpus,      // plan, score or compare plans for GPUs: the GPU model on its profile's links
  kMeasuringThisCpu,  // time plans or shard sets on this machine's CPU: the CPU model, which describes one
};

// The model a command runs with: --model as given, else $SHARDPLAN_MODEL, else the bundled model for
// `use` (logged, with why). The bundled GPU model also names its hardware profile: `hardware` (the
// --hardware flag) gets it when empty, so the all-to-all is planned on that profile's links.
// `by_default` is true when neither the flag nor the environment named a model.
struct ModelChoice {
  std::string model;
  bool by_default = false;
};
ModelChoice choose_model(const std::string& model_flag, ModelUse use, std::string* hardware = nullptr);
// The use of a command that measures (`measuring`) on `device` ("cpu" or "cuda").
ModelUse model_use_when_measuring(bool measuring, const std::string& device);
// The model named by --model (choose_model's); logs which one. Throws InputError when it is missing or unreadable.
// With `hardware`, the model plans for that profile's links (NeuralCostModel::plan_for_hardware; the
// analytic model takes its bandwidths).
std::shared_ptr<const CostModel> load_model_flag(const std::string& model, int devices_per_host,
                                                 const HardwareProfile* hardware = nullptr);
// The files load_model_flag reads (none for the analytic model), for the output check.
std::vector<LabelledPath> model_flag_inputs(const std::string& model);

void add_search_options(CLI::App& app, NeuroShardConfig& config);

// Every planner a command takes, for its help: the registry's, the measuring one and TorchRec's own.
std::string planners_help();

}  // namespace shardplan::cli
