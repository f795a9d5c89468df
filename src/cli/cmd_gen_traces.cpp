// shard-plan gen-traces --tables T --batch-size B --seed S -o F: the index traces measurements draw, for
// programs outside this binary (python -m shardplan.measure feeds them to TorchRec).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/dataset/trace.hpp"
#include "shardplan/dataset/trace_file.hpp"

namespace shardplan::cli {

namespace {

constexpr int64_t kMaxBatch = 1 << 24;

int run_gen_traces(int argc, char** argv) {
  CLI::App app{
      "Writes one batch of lookups per table, the traces `evaluate --measure` and collect-costs draw (each "
      "table's pooling factor and reuse histogram), for other programs to replay. Table i's trace is seeded "
      "by the seed and i, so a table's trace depends on the seed, its index and itself alone.",
      "shard-plan gen-traces"};
  app.footer(R"(Example:
  shard-plan gen-traces --tables data/examples/tables-4gpu.json --batch-size 2048 --seed 1 -o traces.bin

The file (shard-plan-traces/1): one line of JSON, then the arrays it points to, as little-endian int64.
  {"format": "shard-plan-traces/1", "batch_size": B, "seed": S, "byte_order": "little",
   "tables": [{"name", "rows", "dim", "dtype", "lookups", "indices_at", "offsets_at"}, ...]}
indices_at and offsets_at count bytes from the end of that line; a table has `lookups` indices in [0, rows)
and B + 1 offsets (bag i is indices[offsets[i], offsets[i+1])).

Exit codes: 0 success, 1 write failure, 2 bad usage or input.)");
  std::string tables_path;
  std::string output;
  int64_t batch_size = 2048;
  uint64_t seed = 0;
  LogOptions log_options;
  app.add_option("--tables", tables_path, "Tables file")->required();
  app.add_option("--batch-size", batch_size, "Samples per trace (a measurement's global batch)")->capture_default_str();
  add_seed_option(app, seed, "Seed of the traces");
  app.add_option("-o,--output", output, "Trace file to write")->required();
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  if (batch_size < 1 || batch_size > kMaxBatch) {
    throw InputError(fmt::format("--batch-size: must be 1 to {}, got {}", kMaxBatch, batch_size));
  }

  check_output_files({{"-o", output}}, {{"--tables", tables_path}});
  std::vector<Table> tables = load_tables(tables_path);
  std::vector<IndexTrace> traces;
  for (std::size_t i = 0; i < tables.size(); ++i)
    traces.push_back(synthesize_trace(tables[i], batch_size, derive_seed(seed, i)));
  write_file_atomically(output, format_trace_file(tables, traces, batch_size, seed));
  spdlog::info("wrote {} traces of {} samples to {}", tables.size(), batch_size, output);
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(gen_traces, "gen-traces", "write the index traces measurements draw, for other programs",
                           run_gen_traces);

}  // namespace shardplan::cli
