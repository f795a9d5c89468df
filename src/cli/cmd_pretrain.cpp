// shard-plan pretrain-cost-model: train the compute and communication cost models on measured data.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/torch/pretrain.hpp"

namespace shardplan::cli {

namespace {

void print_metrics(const nlohmann::json& meta) {
  const auto& m = meta["metrics"];
  fmt::print("test metrics:\n");
  print_metrics_line("compute", m["compute"]);
  if (m.contains("comm_source")) {
    const std::string source = m["comm_source"].get<std::string>();
    if (meta.value("comm", nlohmann::json::object()).value("structure_only", false)) {
      fmt::print("communication: {}\n", source);
    } else {
      fmt::print("communication model carried over from {}:\n", source);
    }
  }
  if (!m["comm"].is_null()) {
    print_metrics_line("comm forward", m["comm"]["fw"]);
    print_metrics_line("comm backward", m["comm"]["bw"]);
  }
  if (!m["comm_holdout"].is_null()) {
    int w = m["comm_holdout"]["world_size"];
    print_metrics_line(fmt::format("comm forward, unseen W={}", w), m["comm_holdout"]["fw"]);
    print_metrics_line(fmt::format("comm backward, unseen W={}", w), m["comm_holdout"]["bw"]);
  }
}

constexpr const char* kFooter = R"(Example:
  shard-plan pretrain-cost-model --data data/costs/cpu-2core --out models/cpu-2core
  shard-plan pretrain-cost-model --data costs/my-gpu --comm-from models/cpu-2core --out models/my-gpu
  shard-plan pretrain-cost-model --data data/costs/h100 --comm-from default --hardware h100-sxm-ib400 --out models/h100

The same seed and thread count give the same model.)";

int run_pretrain(int argc, char** argv) {
  CLI::App app{
      "Pre-trains the neural cost models on cost data from collect-costs: the compute model (per-shard "
      "network, sum over a device's shards, head) and one communication model for every device count. "
      "Adam on the MSE of standardised log latency, early stopping on a validation split, best weights "
      "kept; prints and stores test metrics.",
      "shard-plan pretrain-cost-model"};
  configure_app(app);
  app.footer(kFooter);
  PretrainConfig config;
  LogOptions log_options;
  app.add_option("--data", config.data_dir, "Cost data: compute and comm directories at or below it")->required();
  app.add_option("--out", config.out_dir, "Model directory to write (meta.json, compute.pt, comm.pt)")->required();
  app.add_option("--comm-from", config.comm_from,
                 "Model directory whose communication model to keep, for compute-only data (a machine with one "
                 "GPU cannot time all-to-alls); without it the data must hold comm samples")
      ->type_name("MODEL_DIR");
  app.add_option(
      "--hardware", config.hardware,
      "Hardware profile (name in data/hardware or a file) whose links give the all-to-all structure the comm "
      "network corrects; default: its figures are fitted to the comm data");
  app.add_option("--epochs", config.epochs, "Most epochs per model")->capture_default_str();
  app.add_option("--patience", config.patience, "Stop after this many epochs without a better validation loss")
      ->capture_default_str();
  app.add_option("--lr", config.learning_rate, "Adam learning rate")->capture_default_str();
  app.add_option("--batch-size", config.batch_size, "Devices (samples) per step")->capture_default_str();
  add_seed_option(app, config.seed, "Seed for initialisation, splits and shuffling");
  app.add_option("--threads", config.threads, "CPU threads")->capture_default_str();
  app.add_option("--val-fraction", config.validation_fraction, "Share of samples for validation")
      ->capture_default_str();
  app.add_option("--test-fraction", config.test_fraction, "Share of samples for the test metrics")
      ->capture_default_str();
  app.add_option("--max-iteration-spread", config.max_iteration_spread,
                 "Leave out compute samples whose timed iterations spread more than this share of their median "
                 "(disturbed measurements); 0 keeps all")
      ->capture_default_str();
  app.add_option("--holdout-world-size", config.holdout_world_size,
                 "World size left out to test the comm model on an unseen device count (0: the middle one)")
      ->capture_default_str();
  app.add_option("--interaction-range", config.interaction_range,
                 "A device's compute is its shards' summed alone latencies times exp(range x tanh(head)); "
                 "this bounds how far the head may discount or inflate that sum")
      ->capture_default_str();
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  config.quiet = log_options.quiet;
  config.command_line = command_line("shard-plan", argc, argv);
  std::vector<LabelledPath> inputs = {{"--data", config.data_dir}};
  if (!config.comm_from.empty()) inputs.push_back({"--comm-from", resolve_model_dir(config.comm_from)});
  check_output_directories({{"--out", config.out_dir}}, inputs);

  nlohmann::json meta = pretrain_cost_models(config);
  spdlog::info("wrote {} in {} s", config.out_dir, meta["training"]["seconds"].get<double>());
  if (!log_options.quiet) print_metrics(meta);
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(pretrain, "pretrain-cost-model", "train the neural cost models on measured costs",
                           run_pretrain);

}  // namespace shardplan::cli
