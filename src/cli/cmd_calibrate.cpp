// shard-plan calibrate: adapt a pre-trained cost model to this machine's device in minutes.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "launcher_env.hpp"
#include "python_stack.hpp"
#include "shardplan/core/bundled_path.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/torch/calibrate.hpp"
#include "shardplan/torch/calibration_job.hpp"
#include "shardplan/torch/local_comm_timer.hpp"

namespace shardplan::cli {

namespace {

// The bundled file, or an error that says which flag to pass instead.
std::string bundled_or_error(const std::string& relative, const char* flag) {
  std::string path = find_bundled_path(relative);
  if (path.empty())
    throw InputError(fmt::format("{}: no bundled {} found beside the executable; pass {}", flag, relative, flag));
  return path;
}

// The bundled model closest to what this calibration measures: the GPU's on a GPU, else the CPU model of
// the same kernel.
std::string default_base(const ComputeBenchConfig& bench) {
  const char* name = bench.device == "cuda"                                 ? kGpuModelName
                     : bench.kernel == ComputeBenchConfig::kFbgemmTbeKernel ? "cpu-fbgemm"
                                                                            : kCpuModelName;
  const std::string dir = bundled_or_error(std::string("models/") + name, "--base");
  spdlog::info("base model: {} (the bundled model for {} with {}), {}", name, bench.device, bench.kernel, dir);
  return dir;
}

void add_calibrate_options(CLI::App& app, CalibrateConfig& c, std::string& mem_cap) {
  app.add_option("--out", c.out_dir, "Model directory to write (created, or resumed when it holds a calibration)")
      ->required();
  app.add_option("--base", c.base_dir,
                 "Model to start from; default: the bundled model of the device and kernel (h100 on cuda, "
                 "cpu-fbgemm with --kernel fbgemm-tbe, else cpu-2core)")
      ->type_name("DIR");
  app.add_option("--hardware", c.hardware,
                 "Plan the all-to-all on this profile's links at --batch-size, by the structure alone (a GPU's "
                 "calibration: the base's all-to-alls were timed elsewhere); default: keep the base's")
      ->type_name("NAME|FILE");
  app.add_option("--comm-ranks", c.comm_ranks,
                 "Also time the all-to-alls of plan-like layouts on this many Gloo ranks of this host, and correct "
                 "the base's comm model to them; 0: keep it as it is")
      ->capture_default_str();
  app.add_option("--comm-plans", c.comm_plans, "With --comm-ranks, the plans whose all-to-alls are timed")
      ->capture_default_str();
  app.add_option("--sets", c.sets_dir,
                 "Fine-tune on the compute sets in this cost-data directory, timed elsewhere (each rank's compute "
                 "on TorchRec: tools/torchrec-cost-data), instead of measuring any here")
      ->type_name("DIR")
      ->excludes("--comm-ranks");
  app.add_option("--tables", c.pool_path, "Table pool the sets are drawn from; default: the bundled data/pool.json");
  app.add_option("--samples", c.samples, "Shard sets to measure")->capture_default_str();
  app.add_option("--minutes", c.minutes, "Time for the whole run, measuring and fine-tuning")->capture_default_str();
  app.add_option("--mem-cap", mem_cap, "A device's memory share: no measured set's weights exceed it")
      ->capture_default_str();
  app.add_option("--max-tables", c.sampling.max_tables, "Tables per random draw")->capture_default_str();
  add_seed_option(app, c.sampling.seed, "Seed; set i depends only on (seed, i) and the base model");
  app.add_option("--holdout-fraction", c.holdout_fraction, "Share of the sets kept out of fine-tuning to measure it")
      ->capture_default_str();
  add_bench_options(app, c.bench);
  const char* tuning = "Fine-tuning";
  app.add_option("--epochs", c.epochs, "Most fine-tuning epochs")->capture_default_str()->group(tuning);
  app.add_option("--patience", c.patience, "Stop after this many epochs without a better validation loss")
      ->capture_default_str()
      ->group(tuning);
  app.add_option("--lr", c.learning_rate, "Adam learning rate")->capture_default_str()->group(tuning);
  app.add_option("--train-batch-size", c.batch_size, "Sets per step")->capture_default_str()->group(tuning);
  app.add_option("--train-threads", c.threads, "CPU threads for fine-tuning")->capture_default_str()->group(tuning);
}

// A job times with the kernel it trains with: FBGEMM's TBE where this rank's Python imports it.
void choose_job_kernel(ComputeBenchConfig& bench) {
  try {
    bench.tbe_worker = tbe_worker_program();
    bench.kernel = ComputeBenchConfig::kFbgemmTbeKernel;
  } catch (const InputError& e) {
    spdlog::warn("{}; timing with LibTorch's embedding_bag instead", e.what());
  }
}

// The defaults the bundled files give, and what the flags alone decide, before minutes of measuring. Only
// rank 0 of a job writes, so only it checks --out.
void check_calibrate_flags(CalibrateConfig& config, const std::string& mem_cap, int argc, char** argv, bool writes) {
  check_bench_options(config.bench);
  config.sampling.memory_cap_bytes = parse_byte_size(mem_cap, "--mem-cap");
  if (config.base_dir.empty()) config.base_dir = default_base(config.bench);
  if (config.pool_path.empty()) config.pool_path = bundled_or_error("data/pool.json", "--tables");
  config.command_line = command_line("shard-plan", argc, argv);
  std::vector<LabelledPath> inputs = {{"--base", resolve_model_dir(config.base_dir)}, {"--tables", config.pool_path}};
  if (!config.sets_dir.empty()) inputs.push_back({"--sets", config.sets_dir});
  if (writes) check_output_directories({{"--out", config.out_dir}}, inputs);
}

void warn_interrupted(const CalibrateConfig& config, const CalibrateOutcome& outcome) {
  if (outcome.comm_untimed) {
    spdlog::warn(
        "{}: stopped while timing the all-to-alls (interrupted, or some plans left untimed); the timed "
        "plans are kept: re-run the same command to resume",
        config.out_dir);
  } else {
    spdlog::warn("{}: stopped after {} measured sets (interrupted); re-run the same command to resume", config.out_dir,
                 outcome.samples);
  }
}

// The errors before and after, to stdout.
void print_calibration(const CalibrateConfig& config, const CalibrateOutcome& outcome) {
  const auto& c = outcome.meta["calibration"];
  const std::string device_model = outcome.meta["hardware"]["compute"]["device_model"].get<std::string>();
  if (config.sets_dir.empty()) {
    fmt::print("calibrated {} from {} on {} ({} sets measured, {} this run)\n", config.out_dir, config.base_dir,
               device_model, outcome.samples, outcome.measured_now);
  } else {
    fmt::print("calibrated {} from {} on {} sets of {} (timed on {})\n", config.out_dir, config.base_dir,
               outcome.samples, config.sets_dir, device_model.empty() ? "an unnamed device" : device_model);
  }
  fmt::print("compute error on {} held-out sets:\n", c["held_out_samples"].get<int64_t>());
  print_metrics_line("base model", c["before"]);
  print_metrics_line(fmt::format("scaled x{:.3f}", c["scale"].get<double>()), c["after_scale_only"]);
  print_metrics_line("fine-tuned", c["after"]);
  fmt::print("communication: {}\n", c["comm"].get<std::string>());
  const auto fit = c.find("comm_fit");
  if (fit == c.end()) return;
  const auto& before = (*fit)["before"];
  const auto& after = (*fit)["after"];
  fmt::print("all-to-all error per device on {} held-out plans (forward, backward, both):\n",
             (*fit)["held_out_plans"].get<int64_t>());
  fmt::print("  {:<12} {:6.1f}% {:6.1f}% {:6.1f}%\n", "base model", before["fw_mape_percent"].get<double>(),
             before["bw_mape_percent"].get<double>(), before["total_mape_percent"].get<double>());
  fmt::print("  {:<12} {:6.1f}% {:6.1f}% {:6.1f}%{}\n", "corrected", after["fw_mape_percent"].get<double>(),
             after["bw_mape_percent"].get<double>(), after["total_mape_percent"].get<double>(),
             (*fit)["kept_base"].get<bool>() ? " (not kept)" : "");
}

// The collector's protocol, as bench --measure-comm times it.
LocalCommTimerConfig comm_protocol(bool quiet) {
  LocalCommTimerConfig protocol;
  protocol.quiet = quiet;
  return protocol;
}

// One rank of `torchrun ... --no-python shard-plan calibrate`: rank 0 prints what a single calibration does.
int run_calibration_job(const CLI::App& app, CalibrateConfig& config, const std::string& mem_cap, int argc,
                        char** argv) {
  CalibrationJob job;
  job.where = rendezvous_from_environment(0, 1, "leave WORLD_SIZE unset to calibrate this host alone");
  job.gpus_per_host = local_world_size_from_environment(job.where.world_size);
  job.comm = comm_protocol(config.quiet);
  job.comm.max_ranks = job.where.world_size;
  job.comm.launch_command = command_line("shard-plan", argc, argv);
  if (app.count("--kernel") == 0) choose_job_kernel(config.bench);
  const bool leader = job.where.rank == 0;
  check_calibrate_flags(config, mem_cap, argc, argv, leader);
  if (!leader) config.quiet = true;
  std::vector<Table> pool = load_tables(config.pool_path);
  CalibrationJobOutcome outcome = calibrate_as_job(pool, config, job);
  if (!leader) {
    spdlog::info("rank {}: timed {} compute sets; rank 0 writes the model", job.where.rank, outcome.sets_timed);
    return 0;
  }
  if (outcome.calibration.interrupted) {
    warn_interrupted(config, outcome.calibration);
    return static_cast<int>(ExitCode::kRuntimeFailure);
  }
  if (!config.quiet) print_calibration(config, outcome.calibration);
  return 0;
}

int run_calibrate(int argc, char** argv) {
  CLI::App app{
      "Adapts a cost model to this machine: measures plan-like shard sets on this device (devices of "
      "plans of small drawn tasks, alternating with random draws), fine-tunes the base model's compute "
      "part on them and reports its error before and after on a held-out part. The communication "
      "model is kept from the base (one device cannot time all-to-alls); with --comm-ranks, the "
      "all-to-alls of plan-like layouts are timed on that many ranks of this host too, and the base's "
      "comm model is corrected to them.",
      "shard-plan calibrate"};
  configure_app(app);
  app.footer(R"(Examples:
  shard-plan calibrate --out models/this-machine
  shard-plan calibrate --out models/my-gpu --device cuda --batch-size 65536 --mem-cap 16GiB --minutes 10
  shard-plan calibrate --out models/this-host --comm-ranks 4
  # a model of a cluster: every rank times sets on its own device, all of them the all-to-alls
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-endpoint HOST0:29500 --rdzv-backend c10d \
    --no-python shard-plan calibrate --out models/my-cluster --device cuda --batch-size 65536
  shard-plan calibrate --out models/torchrec-here --base models/this-machine --sets costs/torchrec-ranks
  shard-plan --tables tables.json --gpus 8 --model models/this-machine

The measured sets go to MODEL_DIR/calibration/ (cost-data format). Ctrl-C stops after the current set and
keeps the measured ones; re-running the same command resumes, then fine-tunes. --minutes bounds the whole
run: measuring stops early enough to leave time to fine-tune. --comm-ranks times its plans first, in one
run of the ranks (about 25 s for 40 plans on 4 ranks of a 2-core VM), into
MODEL_DIR/calibration/comm-plans.json. With --sets nothing is measured: the sets are the directory's,
held out by their index as measured ones are. Launched by torchrun (WORLD_SIZE set), every rank runs the
same command: the kernel defaults to fbgemm-tbe where FBGEMM imports, the all-to-alls are the job's (Gloo on
CPU ranks, NCCL with --device cuda) and rank 0 writes --out (docs/cluster-model.md).)");
  CalibrateConfig config;
  // The settings of the bundled model's compute data: five timed steps, sets up to 4 GiB (a benchmark
  // task's device).
  config.bench.timed_iterations = 5;
  std::string mem_cap = "4GiB";
  LogOptions log_options;
  add_calibrate_options(app, config, mem_cap);
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  config.quiet = log_options.quiet;
  if (launched_as_rank()) return run_calibration_job(app, config, mem_cap, argc, argv);
  check_calibrate_flags(config, mem_cap, argc, argv, true);

  std::vector<Table> pool = load_tables(config.pool_path);
  LocalCommTimerConfig comm_timer = comm_protocol(log_options.quiet);
  comm_timer.max_ranks = 64;
  comm_timer.launch_command = "shard-plan calibrate --comm-ranks";
  CalibrateOutcome outcome = calibrate_cost_model(pool, config, {}, local_comm_timer(comm_timer));
  if (outcome.interrupted) {
    warn_interrupted(config, outcome);
    return static_cast<int>(ExitCode::kRuntimeFailure);
  }
  if (!log_options.quiet) print_calibration(config, outcome);
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(calibrate, "calibrate", "adapt a cost model to this machine (measure, fine-tune)",
                           run_calibrate);

}  // namespace shardplan::cli
