// shard-plan eval-cost-model: a model's accuracy on any cost data (measurements it was not trained on).
#include <fmt/format.h>

#include <map>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/torch/pretrain.hpp"

namespace shardplan::cli {

namespace {

constexpr const char* kFooter = R"(Example:
  shard-plan eval-cost-model --model models/cpu-2core --data costs/other-run --json)";

// Per world size in numeric order (JSON keeps its keys as strings, in string order).
std::map<int, const nlohmann::json*> by_world_size(const nlohmann::json& per_size) {
  std::map<int, const nlohmann::json*> by_size;
  for (const auto& [world_size, own] : per_size.items()) by_size[std::stoi(world_size)] = &own;
  return by_size;
}

void print_comm_metrics(const nlohmann::json& comm) {
  print_metrics_line("comm forward", comm["fw"]);
  print_metrics_line("comm backward", comm["bw"]);
  // Each sample's slowest device: the all-to-all a step waits for.
  if (comm.contains("fw_slowest")) {
    print_metrics_line("comm forward, slowest", comm["fw_slowest"]);
    print_metrics_line("comm backward, slowest", comm["bw_slowest"]);
  }
  if (comm.contains("by_world_size")) {
    for (const auto& [world_size, own] : by_world_size(comm["by_world_size"])) {
      print_metrics_line(fmt::format("comm forward, W={}", world_size), (*own)["fw"]);
      print_metrics_line(fmt::format("comm backward, W={}", world_size), (*own)["bw"]);
    }
  }
  if (comm.contains("bw_slowest_imbalance")) {
    for (const auto& [world_size, own] : by_world_size(comm["bw_slowest_imbalance"])) {
      fmt::print("  slowest backward, W={}: x (widest / mean width)^{:.3f} measured, ^{:.3f} predicted  (n={})\n",
                 world_size, (*own)["measured_exponent"].get<double>(), (*own)["predicted_exponent"].get<double>(),
                 (*own)["count"].get<int64_t>());
    }
  }
  if (comm.contains("allreduce")) print_metrics_line("all-reduce", comm["allreduce"]);
  if (comm.contains("rowwise")) print_metrics_line("row-wise steps", comm["rowwise"]);
}

// The metrics as aligned lines, to stdout.
void print_model_metrics(const nlohmann::json& metrics) {
  if (metrics.contains("compute")) print_metrics_line("compute", metrics["compute"]);
  if (metrics.contains("comm")) print_comm_metrics(metrics["comm"]);
  if (metrics.contains("comm_structure_alone")) {
    print_metrics_line("comm forward, structure", metrics["comm_structure_alone"]["fw"]);
    print_metrics_line("comm backward, structure", metrics["comm_structure_alone"]["bw"]);
    if (metrics["comm_structure_alone"].contains("fw_slowest")) {
      print_metrics_line("comm fw, structure, slowest", metrics["comm_structure_alone"]["fw_slowest"]);
      print_metrics_line("comm bw, structure, slowest", metrics["comm_structure_alone"]["bw_slowest"]);
    }
  }
}

int run_eval_model(int argc, char** argv) {
  CLI::App app{
      "Evaluates a cost model on a cost-data directory: MSE, MAPE and Spearman rank correlation of the "
      "compute model and of the forward and backward communication model.",
      "shard-plan eval-cost-model"};
  configure_app(app);
  app.footer(kFooter);
  std::string model_dir;
  std::string data_dir;
  bool json = false;
  LogOptions log_options;
  app.add_option("--model", model_dir, "Model directory")->required();
  app.add_option("--data", data_dir, "Cost data (compute and/or comm directories at or below it)")->required();
  app.add_flag("--json", json, "Print the metrics as JSON");
  std::string hardware;
  app.add_option("--hardware", hardware,
                 "Score the all-to-alls for this hardware profile's links (as plan --hardware does): on emulated or "
                 "another cluster's data, the structure alone unless the model was measured on this profile; "
                 "adds the structure-alone metrics")
      ->type_name("NAME|FILE");
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);

  nlohmann::json metrics = evaluate_cost_model(model_dir, data_dir, hardware);
  if (json) {
    fmt::print("{}\n", metrics.dump(2));
    return 0;
  }
  print_model_metrics(metrics);
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(eval_model, "eval-cost-model", "a cost model's accuracy on cost data", run_eval_model);

}  // namespace shardplan::cli
