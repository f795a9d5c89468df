#include "cli_common.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan::cli {

void init_logging() {
  auto logger = spdlog::stderr_color_mt("shard-plan");
  logger->set_pattern("shard-plan: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
}

void configure_app(CLI::App& app) { app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); }

void add_log_options(CLI::App& app, LogOptions& options) {
  app.add_option("--log-level", options.level, "Log verbosity on stderr: trace, debug, info, warn, error, off")
      ->capture_default_str();
  app.add_flag("-q,--quiet", options.quiet, "Print no report and log only warnings and errors");
}

void apply_log_options(const LogOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  // from_str maps unknown names to "off"; refuse them instead of going silent.
  if (level == spdlog::level::off && options.level != "off") {
    throw InputError(
        fmt::format("--log-level: must be trace, debug, info, warn, error or off, got '{}'", options.level));
  }
  if (options.quiet && level < spdlog::level::warn) level = spdlog::level::warn;
  spdlog::set_level(level);
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fmt::print(stderr, "shard-plan: error: {}\nRun '{} --help' for usage.\n", e.what(), app.get_name());
    return static_cast<int>(ExitCode::kBadInput);
  }
  return std::nullopt;
}

std::string command_line(std::string_view prefix, int argc, char** argv) {
  std::string line(prefix);
  for (int i = 0; i < argc; ++i) line += " " + std::string(argv[i]);
  return line;
}

void print_metrics_line(std::string_view what, const nlohmann::json& metrics) {
  // Models trained before the median ratio was recorded lack it.
  const std::string ratio = metrics.contains("median_ratio")
                                ? fmt::format("  median ratio {:.3f}", metrics["median_ratio"].get<double>())
                                : std::string();
  fmt::print("  {:<28} MAPE {:>7.2f}%  Spearman {:.4f}  MSE {:.6g}  (n={}){}\n", what,
             metrics["mape_percent"].get<double>(), metrics["spearman"].get<double>(), metrics["mse"].get<double>(),
             metrics["count"].get<int64_t>(), ratio);
}

void add_cluster_options(CLI::App& app, ClusterFlags& flags, bool gpus_required) {
  auto* gpus = app.add_option("--gpus", flags.gpus, "Number of GPUs (devices) to shard over");
  if (gpus_required) gpus->required();
  app.add_option("--gpus-per-host", flags.gpus_per_host,
                 "GPUs per host; placement is cuda:<rank mod this>. Default: the --hardware profile's, else 8")
      ->each([&flags](const std::string&) { flags.gpus_per_host_given = true; });
  app.add_option("--mem-per-gpu", flags.mem_per_gpu,
                 "Memory per GPU: bytes or a size with a unit (16GiB, 80GB, 512MiB; binary and decimal units). "
                 "Default: the --hardware profile's, else 80GiB")
      ->each([&flags](const std::string&) { flags.mem_per_gpu_given = true; });
  add_hardware_option(app, flags.hardware);
  app.add_option("--device-model", flags.device_model,
                 "The GPU the plan is for, as torch.cuda.get_device_name() names it (\"NVIDIA H100 80GB HBM3\"): "
                 "a cost model timed on another device is warned of. Default: the --hardware profile's")
      ->type_name("NAME");
  app.add_option("--reserve", flags.reserve, "Fraction of each GPU's memory kept for the rest of the model, in [0, 1)")
      ->capture_default_str();
  app.add_option("--optimizer", flags.optimizer,
                 "Sparse optimizer whose state shares the GPU: sgd (none), rowwise_adagrad (1 fp32 per row), "
                 "adagrad (1 fp32 per element), adam (2 fp32 per element)")
      ->capture_default_str();
  app.add_option("--ddr-per-host", flags.ddr_per_host,
                 "Host memory (DDR) per host that tables may live in, behind an HBM cache (TorchRec's "
                 "fused_uvm_caching kernel), shared by the host's GPUs: a size with a unit (2TB, 1536GiB). Used only "
                 "when HBM alone cannot hold the tables. Default: none, every table in HBM")
      ->type_name("SIZE")
      ->each([&flags](const std::string&) { flags.ddr_per_host_given = true; });
  app.add_option("--host-link-GBps", flags.host_link_gbps,
                 "Each GPU's link to host memory, GB/s each way, as cache misses cross it. Default: the --hardware "
                 "profile's host_link, else TorchRec's HBM_TO_DDR_MEM_BW (32 GiB/s)")
      ->type_name("GB/S")
      ->each([&flags](const std::string& text) {
        flags.host_link_given = true;
        flags.host_link_text = text;
      });
}

CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& text) {
        const auto first = text.find_first_not_of(" \t");
        return first != std::string::npos && text[first] == '-' ? "must be a non-negative integer, got " + text
                                                                : std::string();
      },
      "", "non-negative");
}

void add_hardware_option(CLI::App& app, std::string& hardware) {
  app.add_option("--hardware", hardware,
                 "Hardware profile: a shipped name (cpu-2core, h100-sxm-ib400, a100-sxm-ib200; data/hardware/) or a "
                 "profile file. The all-to-all is estimated for its links: with the model's learned correction "
                 "when the model's comm data was measured on it, else from the profile's figures alone "
                 "(docs/hardware.md)")
      ->type_name("NAME|FILE");
}

// TorchRec's HBM_TO_DDR_MEM_BW, 32 GiB/s (planner/constants.py), in decimal GB/s.
constexpr double kTorchRecHostLinkGBps = 32.0 * 1.073741824;

namespace {

// --host-link-GBps as given: a number of GB/s within what a plan file may carry.
double given_host_link(const ClusterFlags& flags) {
  const double link = flags.host_link_gbps;
  if (flags.host_link_text.empty() || !(link >= kMinHostLinkGBps && link <= kMaxHostLinkGBps)) {
    throw InputError(fmt::format("--host-link-GBps: must be a number of GB/s in [{:g}, {:g}], got '{}'",
                                 kMinHostLinkGBps, kMaxHostLinkGBps, flags.host_link_text));
  }
  return link;
}

}  // namespace

Cluster cluster_from_flags(const ClusterFlags& flags, std::optional<HardwareProfile>* profile) {
  std::optional<HardwareProfile> loaded;
  if (!flags.hardware.empty()) loaded = load_hardware_profile(flags.hardware);
  Cluster cluster;
  cluster.num_devices = flags.gpus;
  cluster.devices_per_host = loaded && !flags.gpus_per_host_given ? loaded->gpus_per_host : flags.gpus_per_host;
  cluster.memory_per_device_bytes = loaded && !flags.mem_per_gpu_given
                                        ? loaded->memory_per_gpu_bytes
                                        : parse_byte_size(flags.mem_per_gpu, "--mem-per-gpu");
  if (loaded) cluster.hardware = loaded->name;
  const double profile_link = loaded ? loaded->host_link_gb_per_s : 0.0;
  if (profile != nullptr) *profile = std::move(loaded);
  cluster.reserve_fraction = flags.reserve;
  auto optimizer = parse_optimizer(flags.optimizer);
  if (!optimizer) {
    throw InputError(
        fmt::format("--optimizer: must be sgd, rowwise_adagrad, adagrad or adam, got '{}'", flags.optimizer));
  }
  cluster.optimizer = *optimizer;
  if (flags.ddr_per_host_given) cluster.ddr_per_host_bytes = parse_byte_size(flags.ddr_per_host, "--ddr-per-host");
  cluster.host_link_gb_per_s = flags.host_link_given ? given_host_link(flags) : profile_link;
  if (cluster.offers_host_memory() && cluster.host_link_gb_per_s <= 0.0) {
    cluster.host_link_gb_per_s = kTorchRecHostLinkGBps;
    spdlog::warn(
        "host link: {:.2f} GB/s assumed (TorchRec's HBM_TO_DDR_MEM_BW); give --host-link-GBps or a "
        "--hardware profile with host_link for your GPUs' figure",
        kTorchRecHostLinkGBps);
  }
  validate_cluster(cluster);
  return cluster;
}

std::string flag_of_setting(const std::string& setting) {
  static const std::map<std::string, std::string> flags = {{"GPUs", "--gpus"},
                                                           {"GPUs per host", "--gpus-per-host"},
                                                           {"memory per GPU", "--mem-per-gpu"},
                                                           {"reserve", "--reserve"},
                                                           {"host memory", "--ddr-per-host"},
                                                           {"host link bandwidth", "--host-link-GBps"},
                                                           {"beam width", "--beam-width"},
                                                           {"candidates", "--candidates"},
                                                           {"split steps", "--steps"},
                                                           {"patience", "--patience"},
                                                           {"minimum gain", "--min-gain"},
                                                           {"grid points", "--grid-points"},
                                                           {"grid minimum", "--grid-min"},
                                                           {"grid maximum", "--grid-max"},
                                                           {"refine rounds", "--refine-rounds"},
                                                           {"threads", "--threads"},
                                                           {"time limit", "--time-limit"},
                                                           {"sharding types", "--sharding-types"},
                                                           {"type moves", "--type-moves"},
                                                           {"world size", "--world-size"},
                                                           {"maximum delay", "--max-delay"},
                                                           {"all-to-all ranks", "--comm-ranks"},
                                                           {"samples", "--samples"},
                                                           {"tables per set", "--max-tables"},
                                                           {"minutes", "--minutes"},
                                                           {"held-out fraction", "--holdout-fraction"},
                                                           {"all-to-all plans", "--comm-plans"},
                                                           {"calibration sets", "--sets"},
                                                           {"repeats", "--repeats"},
                                                           {"timeout", "--timeout"},
                                                           {"batch size", "--batch-size"},
                                                           {"backend", "--backend"},
                                                           {"fine-tuning epochs", "--epochs"},
                                                           {"fine-tuning patience", "--patience"},
                                                           {"fine-tuning learning rate", "--lr"},
                                                           {"fine-tuning batch", "--train-batch-size"},
                                                           {"fine-tuning threads", "--train-threads"},
                                                           {"training epochs", "--epochs"},
                                                           {"training batch", "--batch-size"},
                                                           {"learning rate", "--lr"},
                                                           {"training threads", "--threads"},
                                                           {"validation fraction", "--val-fraction"},
                                                           {"test fraction", "--test-fraction"},
                                                           {"interaction range", "--interaction-range"},
                                                           {"comm model source", "--comm-from"},
                                                           {"memory cap", "--mem-cap"},
                                                           {"device", "--device"},
                                                           {"kernel", "--kernel"},
                                                           {"timed iterations", "--iterations"},
                                                           {"warm-up iterations", "--warmup"},
                                                           {"hardware profile", "--hardware"},
                                                           {"measure rounds", "--measure-rounds"},
                                                           {"measure loop budget", "--measure-loop"},
                                                           {"measure loop candidates", "--measure-loop-candidates"},
                                                           {"measure loop rivals", "--measure-loop-rivals"},
                                                           {"planner", "--algo"},
                                                           {"temporary directory", "--temp-dir"},
                                                           {"cost-data directory", "--out"},
                                                           {"pool tables", "--num-tables"},
                                                           {"reference batch", "--batch"},
                                                           {"mean pooling factor", "--mean-pooling-factor"},
                                                           {"tasks", "--num-tasks"},
                                                           {"fewest tables per task", "--min-tables"},
                                                           {"most tables per task", "--max-tables"},
                                                           {"largest width", "--max-width"},
                                                           {"pooling drift", "--drift-pooling"},
                                                           {"grown fraction", "--drift-grow"},
                                                           {"added fraction", "--drift-add"},
                                                           {"retired fraction", "--drift-retire"}};
  const auto found = flags.find(setting);
  return found == flags.end() ? setting : found->second;
}

}  // namespace shardplan::cli
