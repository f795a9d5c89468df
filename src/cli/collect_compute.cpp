// shard-plan collect-costs compute: time random shard sets from a table pool on this device.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench_flags.hpp"
#include "cli_common.hpp"
#include "collect_commands.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/costs/compute_collector.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan::cli {

int run_collect_compute(int argc, char** argv) {
  CLI::App app{
      "Times one training step (forward, backward with sparse gradients, sparse SGD update) of random "
      "shard sets: 1 to --max-tables pool tables, each at a random width 4, 8, ..., 128, grouped by width "
      "into table-batched embedding-bag operators. Appends one sample per line to --out; re-running "
      "with the same settings resumes up to --samples.",
      "shard-plan collect-costs compute"};
  configure_app(app);
  app.footer(R"(Example:
  shard-plan collect-costs compute --tables data/pool.json --samples 200 --out costs/compute

Ctrl-C or SIGTERM stops after the current sample; only complete samples are kept.)");
  ComputeCollectConfig config;
  std::string mem_cap = "512MiB";
  LogOptions log_options;
  app.add_option("--tables", config.pool_path, "Table pool (tables format), e.g. data/pool.json")->required();
  app.add_option("--samples", config.samples, "Samples the --out directory should hold when done")->required();
  app.add_option("--out", config.out_dir, "Cost-data directory (created, or resumed when it exists)")->required();
  app.add_option("--max-tables", config.max_tables, "Shards per sample: 1 to this many")->capture_default_str();
  app.add_option("--mem-cap", mem_cap, "Largest total weight size of one sample's shards")->capture_default_str();
  add_seed_option(app, config.seed, "Seed; sample i depends only on (seed, i)");
  add_bench_options(app, config.bench);
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  config.quiet = log_options.quiet;

  check_bench_options(config.bench);
  config.memory_cap_bytes = parse_byte_size(mem_cap, "--mem-cap");
  config.command_line = command_line("shard-plan collect-costs", argc, argv);
  config.torch_version = torch_version();
  check_output_directories({{"--out", config.out_dir}}, {{"--tables", config.pool_path}});

  std::vector<Table> pool = load_tables(config.pool_path);
  CollectSummary summary = collect_compute_costs(pool, config, compute_timer(config.bench));
  spdlog::info("{}: {} samples ({} new in {:.1f} s){}", config.out_dir, summary.existing + summary.written,
               summary.written, summary.seconds, summary.interrupted ? "; interrupted, re-run to resume" : "");
  return 0;
}

}  // namespace shardplan::cli
