// shard-plan gen-tasks --pool P --protocol paper-4gpu|paper-8gpu|all-128gpu --seed S -o F: sharding tasks
// drawn from the pool, for `shard-plan bench`; or --drift TASKS instead of --protocol: those tasks after a
// seeded drift, to benchmark replanning.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/dataset/task_drift.hpp"
#include "shardplan/dataset/task_generator.hpp"

namespace shardplan::cli {

namespace {

constexpr const char* kFooter = R"(Examples:
  shard-plan gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 1 -o data/tasks/paper-4gpu.json
  shard-plan gen-tasks --drift data/tasks/paper-4gpu.json --pool data/pool.json --seed 2 -o paper-4gpu-drift.json

Protocols (defaults):
  paper-4gpu   100 tasks of 10-60 tables, widths 4..128, 4 GPUs x 4 GiB
  paper-8gpu   100 tasks of 20-120 tables, widths 4..128, 8 GPUs x 4 GiB
  all-128gpu   1 task of all pool tables at the pool's widths, 128 GPUs x 40 GiB

Drift (defaults), per task of n tables: pooling factors x exp(N(0, 0.3)); round(0.1 n) tables grown to
1.25-2x their rows, round(0.1 n) retired, round(0.1 n) added from the pool at widths 4..--max-width (128).
Surviving tables keep their names. The cluster is the drifted set's.

Exit codes: 0 success, 2 bad usage or input, 3 no fitting draw found.)";

// What the task set holds and how it was made (`making`: the draws' or the drift's line), to stdout.
void print_task_set(const TaskSet& set, const std::string& making) {
  TaskSetSummary s = summarize_task_set(set);
  fmt::print("task set {}: {} task(s) on {} GPUs x {}\n", set.name, s.num_tasks, set.num_devices,
             format_bytes(set.memory_per_device_bytes));
  fmt::print("tables per task: min {}, mean {:.1f}, max {}\n", s.min_tables, s.mean_tables, s.max_tables);
  fmt::print("memory used of the cluster's: min {:.1f}%, mean {:.1f}%, max {:.1f}%\n", 100 * s.min_memory_fraction,
             100 * s.mean_memory_fraction, 100 * s.max_memory_fraction);
  fmt::print("{}\n", making);
  fmt::print("tasks the size_greedy planner places table-wise: {} of {}\n", s.greedy_placeable, s.num_tasks);
}

std::string draws_line(const TaskDrawStats& draws) {
  return fmt::format("draws: {} ({} over the cluster's memory, {} with a table over one GPU, rejected)", draws.draws,
                     draws.rejected_over_cluster, draws.rejected_table_over_device);
}

std::string drift_line(const TaskDriftStats& drift) {
  return fmt::format(
      "drift: {} tables retired, {} grown, {} added in all; {} draws redrawn to fit, {} task(s) kept their rows "
      "and gained no tables (fallbacks)",
      drift.retired, drift.grown, drift.added, drift.redraws, drift.fallbacks);
}

// Options of one mode only (protocol or drift): refused in the other, naming the flag.
void refuse_given(const std::vector<const CLI::Option*>& options, const std::string& why) {
  for (const CLI::Option* option : options) {
    if (option->count() > 0) throw InputError(fmt::format("{}: {}", option->get_name(), why));
  }
}

struct DriftFlags {
  std::string tasks_path;
  DriftConfig config;
};

void add_drift_options(CLI::App& app, DriftFlags& flags, std::vector<const CLI::Option*>& drift_only) {
  drift_only.push_back(app.add_option("--drift-pooling", flags.config.pooling_sigma,
                                      "Drift: sigma of the log-normal factor on pooling factors, in [0, 3]")
                           ->capture_default_str());
  drift_only.push_back(app.add_option("--drift-grow", flags.config.grow_fraction,
                                      "Drift: fraction of a task's tables grown to 1.25-2x their rows, in [0, 1)")
                           ->capture_default_str());
  drift_only.push_back(app.add_option("--drift-add", flags.config.add_fraction,
                                      "Drift: tables added from the pool, as a fraction of the task's, in [0, 1)")
                           ->capture_default_str());
  drift_only.push_back(app.add_option("--drift-retire", flags.config.retire_fraction,
                                      "Drift: fraction of a task's tables retired, in [0, 1)")
                           ->capture_default_str());
}

void run_drift(const DriftFlags& flags, const std::string& pool_path, const std::string& output, bool quiet) {
  TaskSet old_set = load_task_set(flags.tasks_path);
  std::vector<Table> pool = load_tables(pool_path);
  spdlog::info("read {} tasks from {} and {} pool tables from {}", old_set.tasks.size(), flags.tasks_path, pool.size(),
               pool_path);
  TaskDriftStats drift;
  TaskSet set = drift_task_set(old_set, pool, flags.config, &drift);
  write_file_atomically(output, format_task_set(set));
  spdlog::info("wrote {} drifted tasks to {}", set.tasks.size(), output);
  if (!quiet) print_task_set(set, drift_line(drift));
}

int run_gen_tasks(int argc, char** argv) {
  CLI::App app{
      "Draws sharding tasks from the table pool: the paper's protocol on 4 or 8 GPUs (tables at random "
      "widths, draws over the cluster's memory rejected) or the whole pool on 128 GPUs. The options after "
      "--seed override the protocol's defaults. With --drift instead of --protocol: an existing task set "
      "after a seeded drift (pooling factors scaled, tables grown, retired and added from the pool). "
      "See docs/dataset.md.",
      "shard-plan gen-tasks"};
  app.footer(kFooter);
  std::string pool_path;
  std::string protocol_name;
  std::string output;
  uint64_t seed = 1;
  std::string name;
  int num_tasks = 0;
  int min_tables = 0;
  int max_tables = 0;
  int gpus = 0;
  int max_width = 0;
  std::string mem_per_gpu;
  DriftFlags drift;
  LogOptions log_options;
  app.add_option("--pool", pool_path, "Table pool (tables format), e.g. data/pool.json")->required();
  auto* protocol_opt =
      app.add_option("--protocol", protocol_name, "paper-4gpu, paper-8gpu or all-128gpu (required without --drift)");
  auto* drift_opt = app.add_option("--drift", drift.tasks_path, "Task set to drift, instead of --protocol");
  add_seed_option(app, seed, "Seed of every random draw");
  app.add_option("-o,--output", output, "Task set file to write")->required();
  auto* name_opt = app.add_option("--name", name, "Task set name (default: the protocol's)");
  auto* tasks_opt = app.add_option("--num-tasks", num_tasks, "Number of tasks");
  auto* min_opt = app.add_option("--min-tables", min_tables, "Fewest tables in a task");
  auto* max_opt = app.add_option("--max-tables", max_tables, "Most tables in a task");
  auto* gpus_opt = app.add_option("--gpus", gpus, "GPUs in the cluster");
  auto* mem_opt = app.add_option("--mem-per-gpu", mem_per_gpu, "Memory per GPU (bytes or 4GiB, 80GB, ...)");
  auto* width_opt = app.add_option("--max-width", max_width, "Largest random width (a multiple of 4)");
  std::vector<const CLI::Option*> drift_only;
  add_drift_options(app, drift, drift_only);
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);

  if (drift_opt->count() > 0) {
    refuse_given({protocol_opt, name_opt, tasks_opt, min_opt, max_opt, gpus_opt, mem_opt},
                 "not with --drift, which keeps the drifted set's tasks and cluster");
    check_output_files({{"-o", output}}, {{"--pool", pool_path}, {"--drift", drift.tasks_path}});
    drift.config.seed = seed;
    if (width_opt->count() > 0) drift.config.max_width = max_width;
    run_drift(drift, pool_path, output, log_options.quiet);
    return 0;
  }
  if (protocol_opt->count() == 0) throw InputError("--protocol is required (or --drift TASKS.json)");
  refuse_given(drift_only, "only with --drift");
  check_output_files({{"-o", output}}, {{"--pool", pool_path}});

  auto protocol = parse_task_protocol(protocol_name);
  if (!protocol) {
    throw InputError(fmt::format("--protocol: must be paper-4gpu, paper-8gpu or all-128gpu, got '{}'", protocol_name));
  }
  TaskSetConfig config = protocol_config(*protocol, seed);
  if (name_opt->count() > 0) config.name = name;
  if (tasks_opt->count() > 0) config.num_tasks = num_tasks;
  if (min_opt->count() > 0) config.min_tables = min_tables;
  if (max_opt->count() > 0) config.max_tables = max_tables;
  if ((min_opt->count() > 0 || max_opt->count() > 0) && config.whole_pool) {
    throw InputError(fmt::format("--min-tables/--max-tables: protocol {} always takes the whole pool", protocol_name));
  }
  if (gpus_opt->count() > 0) config.num_devices = gpus;
  if (mem_opt->count() > 0) config.memory_per_device_bytes = parse_byte_size(mem_per_gpu, "--mem-per-gpu");
  if (width_opt->count() > 0) config.max_width = max_width;

  std::vector<Table> pool = load_tables(pool_path);
  spdlog::info("read {} pool tables from {}", pool.size(), pool_path);
  TaskDrawStats draws;
  TaskSet set = generate_task_set(pool, config, &draws);
  write_file_atomically(output, format_task_set(set));
  spdlog::info("wrote {} tasks to {}", set.tasks.size(), output);
  if (!log_options.quiet) print_task_set(set, draws_line(draws));
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(gen_tasks, "gen-tasks", "draw the benchmark's sharding tasks from the table pool",
                           run_gen_tasks);

}  // namespace shardplan::cli
