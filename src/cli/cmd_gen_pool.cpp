// shard-plan gen-pool --seed S -o data/pool.json: the synthetic 856-table pool of the benchmark.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/dataset/data_files.hpp"
#include "shardplan/dataset/pool_generator.hpp"
#include "shardplan/dataset/pool_stats.hpp"

namespace shardplan::cli {

namespace {

int run_gen_pool(int argc, char** argv) {
  CLI::App app{
      "Generates the benchmark's table pool: tables with rows, pooling factor, width and a 17-bin reuse "
      "histogram, shaped after Meta's dlrm_datasets (fbgemm_t856_bs65536). Prints the pool's statistics, "
      "among them the L1 distance of the pooled reuse histogram to the published aggregate. "
      "See docs/dataset.md.",
      "shard-plan gen-pool"};
  app.footer(R"(Example:
  shard-plan gen-pool --seed 1 -o data/pool.json

The same seed and options give the same file, byte for byte, on every platform.)");
  PoolConfig config;
  std::string output;
  LogOptions log_options;
  add_seed_option(app, config.seed, "Seed of every random draw");
  app.add_option("-o,--output", output, "Pool file to write (tables format)")->required();
  app.add_option("--num-tables", config.num_tables, "Tables in the pool")->capture_default_str();
  app.add_option("--batch", config.reference_batch, "Batch size the reuse histograms describe")->capture_default_str();
  app.add_option("--mean-pooling-factor", config.mean_pooling_factor, "Mean pooling factor over the tables")
      ->capture_default_str();
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  check_output_files({{"-o", output}}, {});

  std::vector<Table> pool = generate_pool(config);
  std::string generated_by =
      fmt::format("shard-plan gen-pool --seed {} --num-tables {} --batch {} --mean-pooling-factor {}", config.seed,
                  config.num_tables, config.reference_batch, config.mean_pooling_factor);
  write_file_atomically(output, format_pool_file(pool, generated_by));
  spdlog::info("wrote {} tables to {}", pool.size(), output);
  if (!log_options.quiet) {
    PoolStats stats = pool_statistics(pool, config.reference_batch, config.target_hist);
    for (const auto& line : format_pool_stats(stats)) fmt::print("{}\n", line);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(gen_pool, "gen-pool", "generate the benchmark's synthetic table pool", run_gen_pool);

}  // namespace shardplan::cli
