#pragma once
// Flags shared by the commands that plan or score plans (plan, bench, evaluate): the cost model and the
// NeuroShard search parameters.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "shardplan/cost_model.hpp"
#include "shardplan/hardware_profile.hpp"
#include "shardplan/neuroshard_config.hpp"
#include "shardplan/output_paths.hpp"

namespace shardplan::cli {

inline constexpr const char* kAnalyticModelName = "analytic";

// --model DIR|analytic (default: the bundled model).
void add_model_option(CLI::App& app, std::string& model);
// The model named by --model; logs which one. Throws InputError when it is missing or unreadable.
// With `hardware`, the model plans for that profile's links (NeuralCostModel::plan_for_hardware; the
// analytic model takes its bandwidths).
std::shared_ptr<const CostModel> load_model_flag(const std::string& model, int devices_per_host,
                                                 const HardwareProfile* hardware = nullptr);
// The files load_model_flag reads (none for the analytic model), for the output check.
std::vector<LabelledPath> model_flag_inputs(const std::string& model);

void add_search_options(CLI::App& app, NeuroShardConfig& config);

}  // namespace shardplan::cli
