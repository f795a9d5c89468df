// shard-plan collect-costs comm: time the forward and backward all-to-all of pooled embeddings over W
// ranks, either spawned here (--spawn) or launched one process per device with torchrun-style variables.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "cli_common.hpp"
#include "collect_commands.hpp"
#include "launcher_env.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/costs/comm_spawn.hpp"
#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan::cli {

namespace {

// The flags of collect-comm: the collection's settings and how the ranks start.
struct CollectCommFlags {
  CommCollectConfig config;
  int world_size = 0;
  bool spawn = false;
  std::string workloads_path;
  CLI::Option* samples_option = nullptr;
  LogOptions log_options;
};

void add_collect_comm_options(CLI::App& app, CollectCommFlags& flags) {
  CommCollectConfig& config = flags.config;
  app.add_option("--world-size", flags.world_size,
                 "Number of ranks W (with --spawn: required; else WORLD_SIZE is used)");
  flags.samples_option =
      app.add_option("--samples", config.samples,
                     "Samples the --out directory should hold when done (required, except with --workloads: all)");
  app.add_option("--workloads", flags.workloads_path,
                 "Time these workloads (a shard-plan-comm-workloads/1 file: per sample, every rank's width sum "
                 "and start delay) instead of random ones; every rank reads the file");
  app.add_option("--out", config.out_dir, "Cost-data directory (created, or resumed when it exists)")->required();
  app.add_option("--batch-size", config.batch_size,
                 "Global batch B (a multiple of W); rank r sends (B/W) x width "
                 "floats to every rank")
      ->capture_default_str();
  app.add_option("--backend", config.backend, "gloo (CPU tensors), nccl (CUDA tensors) or auto (nccl when available)")
      ->capture_default_str();
  add_seed_option(app, config.seed, "Seed; sample i depends only on (seed, i)");
  app.add_option("--max-delay", config.workload.max_delay_ms, "Largest start delay of a rank, in milliseconds")
      ->capture_default_str();
  app.add_option("--repeats", config.repeats,
                 "Timed runs of each sample; every rank records its median delay, forward and backward")
      ->capture_default_str();
  app.add_option("--gpus-per-host", config.gpus_per_host,
                 "Ranks per host when they run on several (emulated) hosts: rank r is on host r / N; recorded in every "
                 "sample, so training places them (tools/emulate-hosts runs such a collection here); given workloads "
                 "with host_rw_dims need it: each host's ranks reduce-scatter their table-row-wise sums in a group of "
                 "their own; 0: one host")
      ->capture_default_str();
  app.add_option("--timeout", config.timeout_s, "Seconds any rank waits for a peer (rendezvous, each collective)")
      ->capture_default_str();
  app.add_flag("--spawn", flags.spawn, "Run all W ranks as processes on this host (loopback)");
  add_log_options(app, flags.log_options);
}

// What the command line alone decides, before any rank starts: the output, the samples, the given
// workloads (read here, so that every rank reads the same file) and the world size --spawn needs.
void check_collect_comm_flags(CollectCommFlags& flags) {
  CommCollectConfig& config = flags.config;
  check_output_directories({{"--out", config.out_dir}}, {{"--workloads", flags.workloads_path}});
  const bool samples_given = flags.samples_option->count() > 0;
  if (flags.workloads_path.empty() && !samples_given) throw InputError("--samples: required (or give --workloads)");
  if (flags.spawn && flags.world_size == 0) throw InputError("--world-size: required with --spawn");
  if (flags.workloads_path.empty()) return;
  const int expected = flags.spawn ? flags.world_size : rendezvous_from_environment(0).world_size;
  config.given_workloads = read_comm_workloads(flags.workloads_path, expected);
  config.workloads_path = flags.workloads_path;
  if (!samples_given) config.samples = static_cast<int64_t>(config.given_workloads.size());
}

// --spawn: every rank a child process of this one, with this command line less --spawn. The settings are
// checked once here, so that bad usage fails with exit status 2 before any rank starts.
int spawn_ranks(CollectCommFlags& flags, int argc, char** argv) {
  flags.config.rendezvous.world_size = flags.world_size;
  validate_comm_collection(flags.config);
  SpawnConfig spawn_config;
  spawn_config.executable = current_executable();
  spawn_config.world_size = flags.world_size;
  spawn_config.args = {"collect-costs"};
  spawn_config.launch_command = "shard-plan collect-costs";
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    spawn_config.launch_command += " " + arg;
    if (arg == "--spawn" || arg.rfind("--spawn=", 0) == 0) continue;
    spawn_config.args.push_back(arg);
  }
  int status = spawn_local_ranks(spawn_config);
  if (status != 0) {
    spdlog::error("collect-costs comm failed; complete samples already in {} are kept (a re-run resumes)",
                  flags.config.out_dir);
  }
  return status;
}

// One rank, placed by the launcher's environment (run_comm_collection checks the settings first).
int run_rank(CollectCommFlags& flags, int argc, char** argv) {
  CommCollectConfig& config = flags.config;
  config.rendezvous = rendezvous_from_environment(flags.world_size);
  if (const char* launch = std::getenv(kLaunchCommandVariable); launch != nullptr && *launch != '\0') {
    config.command_line = launch;
  } else {
    config.command_line = command_line("shard-plan collect-costs", argc, argv);
  }
  CollectSummary summary = run_comm_collection(config);
  if (config.rendezvous.rank == 0) {
    spdlog::info("{}: {} samples ({} new in {:.1f} s){}", config.out_dir, summary.existing + summary.written,
                 summary.written, summary.seconds, summary.interrupted ? "; interrupted, re-run to resume" : "");
  }
  return 0;
}

}  // namespace

int run_collect_comm(int argc, char** argv) {
  CLI::App app{
      "Times the all-to-alls of DLRM model parallelism over W ranks with LibTorch's c10d (Gloo on CPU, "
      "NCCL on CUDA): per sample, every rank gets a random width sum (shards of widths 4..128 with a "
      "random amount of imbalance) and a random start delay, then times the forward all-to-all of pooled "
      "embeddings and the backward all-to-all of their gradients. Rank 0 appends one sample per line "
      "to --out; re-running with the same settings resumes up to --samples.",
      "shard-plan collect-costs comm"};
  configure_app(app);
  app.footer(R"(Examples:
  shard-plan collect-costs comm --world-size 4 --spawn --samples 1000 --out costs/comm/w4
  # the all-to-alls of given plans (bench --measure-comm writes such a file):
  shard-plan collect-costs comm --world-size 4 --spawn --workloads workloads.json --out costs/comm/plans
  # one process per device, on every host (torchrun-style environment):
  RANK=0 WORLD_SIZE=8 LOCAL_RANK=0 MASTER_ADDR=node0 MASTER_PORT=29500 \
    shard-plan collect-costs comm --samples 1000 --out costs/comm/w8

Every rank needs the same options; only rank 0 writes (its --out). A peer that dies, hangs or never
arrives makes the others exit 1 within --timeout (+10 s at worst). Ctrl-C or SIGTERM stops every rank
after the current sample; only complete samples are kept. Exit codes: 0 done or interrupted,
1 measurement failed, 2 bad usage or input. See docs/comm-collection.md.)");
  CollectCommFlags flags;
  add_collect_comm_options(app, flags);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(flags.log_options);
  flags.config.quiet = flags.log_options.quiet;
  check_collect_comm_flags(flags);
  return flags.spawn ? spawn_ranks(flags, argc, argv) : run_rank(flags, argc, argv);
}

}  // namespace shardplan::cli
