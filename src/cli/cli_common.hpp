#pragma once
// What every subcommand shares: logging flags, CLI11 parse-error mapping, the cluster flags.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include <optional>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/hardware_profile.hpp"

namespace shardplan::cli {

struct LogOptions {
  std::string level = "info";
  bool quiet = false;  // no report, warnings and errors only
};

// Applies the settings every command shares (a repeated flag's last value wins, as in most tools);
// call before adding options.
void configure_app(CLI::App& app);

void add_log_options(CLI::App& app, LogOptions& options);
// Applies the options to the stderr logger (call after parsing).
void apply_log_options(const LogOptions& options);
// Creates the stderr logger every command logs through; machine output never goes there.
void init_logging();

// Parses argv; returns an exit code when the command should stop (help, version: 0; bad usage: 2).
std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv);

// The flags that describe a cluster, as strings where they carry units.
struct ClusterFlags {
  int gpus = 0;
  int gpus_per_host = 8;  // unless given: the profile's
  std::string mem_per_gpu = "80GiB";
  bool gpus_per_host_given = false;
  bool mem_per_gpu_given = false;
  std::string hardware;      // --hardware NAME|FILE; empty: none
  std::string device_model;  // --device-model; empty: the profile's, if it names one
  double reserve = 0.0;
  std::string optimizer = "sgd";
  std::string ddr_per_host;  // --ddr-per-host; not given: none (every table in HBM)
  bool ddr_per_host_given = false;
  double host_link_gbps = 0.0;  // --host-link-GBps; not given: the profile's, else TorchRec's default
  std::string host_link_text;   // as given: CLI11 reads "" as 0
  bool host_link_given = false;
};

// "shard-plan collect-costs compute --samples 10": how a command was run, for data and model provenance.
// `prefix` names what precedes argv[0] ("shard-plan" or "shard-plan collect-costs").
std::string command_line(std::string_view prefix, int argc, char** argv);

// One aligned line of accuracy metrics ({"mape_percent", "spearman", "mse", "count"}), to stdout.
void print_metrics_line(std::string_view what, const nlohmann::json& metrics);

void add_cluster_options(CLI::App& app, ClusterFlags& flags, bool gpus_required);

// Refuses a negative number for an unsigned option: CLI11 would read "-1" as 2^64 - 1.
CLI::Validator non_negative_integer();

// --seed, a non-negative integer, its default shown.
template <typename Seed>
CLI::Option* add_seed_option(CLI::App& app, Seed& seed, const std::string& description) {
  return app.add_option("--seed", seed, description)->check(non_negative_integer())->capture_default_str();
}

// The flag that sets a library setting (Error::setting(), of a SettingError, SettingFailure or
// InfeasibleSetting: "beam width" -> "--beam-width"); the setting itself when no flag does.
std::string flag_of_setting(const std::string& setting);
// Throws InputError naming the flag and value. With --hardware, the profile is loaded into `profile`
// (when given) and sets the GPUs per host and memory the flags leave out.
Cluster cluster_from_flags(const ClusterFlags& flags, std::optional<HardwareProfile>* profile = nullptr);

// --hardware NAME|FILE on the commands that score plans without cluster flags (bench, evaluate).
void add_hardware_option(CLI::App& app, std::string& hardware);

}  // namespace shardplan::cli
