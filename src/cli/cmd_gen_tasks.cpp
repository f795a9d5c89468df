// shard-plan gen-tasks --pool P --protocol paper-4gpu|paper-8gpu|all-128gpu --seed S -o F: sharding tasks
// drawn from the pool, for `shard-plan bench`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/dataset/task_generator.hpp"

namespace shardplan::cli {

namespace {

constexpr const char* kFooter = R"(Example:
  shard-plan gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 1 -o data/tasks/paper-4gpu.json

Protocols (defaults):
  paper-4gpu   100 tasks of 10-60 tables, widths 4..128, 4 GPUs x 4 GiB
  paper-8gpu   100 tasks of 20-120 tables, widths 4..128, 8 GPUs x 4 GiB
  all-128gpu   1 task of all pool tables at the pool's widths, 128 GPUs x 40 GiB

Exit codes: 0 success, 2 bad usage or input, 3 no fitting draw found.)";

// What the task set holds and how its draws went, to stdout.
void print_task_set(const TaskSet& set, const TaskDrawStats& draws) {
  TaskSetSummary s = summarize_task_set(set);
  fmt::print("task set {}: {} task(s) on {} GPUs x {}\n", set.name, s.num_tasks, set.num_devices,
             format_bytes(set.memory_per_device_bytes));
  fmt::print("tables per task: min {}, mean {:.1f}, max {}\n", s.min_tables, s.mean_tables, s.max_tables);
  fmt::print("memory used of the cluster's: min {:.1f}%, mean {:.1f}%, max {:.1f}%\n", 100 * s.min_memory_fraction,
             100 * s.mean_memory_fraction, 100 * s.max_memory_fraction);
  fmt::print("draws: {} ({} over the cluster's memory, {} with a table over one GPU, rejected)\n", draws.draws,
             draws.rejected_over_cluster, draws.rejected_table_over_device);
  fmt::print("tasks the size_greedy planner places table-wise: {} of {}\n", s.greedy_placeable, s.num_tasks);
}

int run_gen_tasks(int argc, char** argv) {
  CLI::App app{
      "Draws sharding tasks from the table pool: the paper's protocol on 4 or 8 GPUs (tables at random "
      "widths, draws over the cluster's memory rejected) or the whole pool on 128 GPUs. The options after "
      "--seed override the protocol's defaults. See docs/dataset.md.",
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
  LogOptions log_options;
  app.add_option("--pool", pool_path, "Table pool (tables format), e.g. data/pool.json")->required();
  app.add_option("--protocol", protocol_name, "paper-4gpu, paper-8gpu or all-128gpu")->required();
  add_seed_option(app, seed, "Seed of every random draw");
  app.add_option("-o,--output", output, "Task set file to write")->required();
  auto* name_opt = app.add_option("--name", name, "Task set name (default: the protocol's)");
  auto* tasks_opt = app.add_option("--num-tasks", num_tasks, "Number of tasks");
  auto* min_opt = app.add_option("--min-tables", min_tables, "Fewest tables in a task");
  auto* max_opt = app.add_option("--max-tables", max_tables, "Most tables in a task");
  auto* gpus_opt = app.add_option("--gpus", gpus, "GPUs in the cluster");
  auto* mem_opt = app.add_option("--mem-per-gpu", mem_per_gpu, "Memory per GPU (bytes or 4GiB, 80GB, ...)");
  auto* width_opt = app.add_option("--max-width", max_width, "Largest random width (a multiple of 4)");
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
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
  if (!log_options.quiet) print_task_set(set, draws);
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(gen_tasks, "gen-tasks", "draw the benchmark's sharding tasks from the table pool",
                           run_gen_tasks);

}  // namespace shardplan::cli
