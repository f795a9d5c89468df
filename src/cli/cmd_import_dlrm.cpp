// shard-plan import-dlrm-dataset FILE [-o tables.json]: tables from a dlrm_datasets file.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/json_format.hpp"
#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/torch/dlrm_import.hpp"

namespace shardplan::cli {

namespace {

int run_import_dlrm(int argc, char** argv) {
  CLI::App app{
      "Derives a tables file from a dlrm_datasets file: torch.save((indices, offsets, lengths)) with lengths "
      "of shape [tables, batch_size], plain (.pt) or gzipped (.pt.gz). Per table: rows = max id + 1 (at least "
      "100), pooling_factor = mean bag length, reuse_hist = the 17-bin reuse histogram of its distinct ids.",
      "shard-plan import-dlrm-dataset"};
  app.footer(R"(Example:
  shard-plan import-dlrm-dataset fbgemm_t856_bs65536.pt.gz -o data/dlrm_tables.json

The file is read table by table from disk; memory holds about 8 bytes per id of the largest table.
A gzipped file is first unpacked into an unlinked temporary file in --temp-dir (default $TMPDIR, else /tmp),
which needs the unpacked size in free space and disappears when the command ends, however it ends.

Exit codes: 0 success, 1 runtime failure (e.g. disk full), 2 bad usage or a bad, truncated or inconsistent file.)");
  std::string input;
  std::string output = "tables.json";
  DlrmImportOptions options;
  LogOptions log_options;
  app.add_option("FILE", input, "The dlrm_datasets file (.pt or .pt.gz)")->required();
  app.add_option("-o,--output", output, "Tables file to write ('-': JSON to stdout, summary to stderr)")
      ->capture_default_str();
  app.add_option("--dim", options.dim, "Embedding width given to every table (the files carry none)")
      ->capture_default_str();
  app.add_option("--temp-dir", options.temp_dir, "Where a gzipped file is unpacked (default: $TMPDIR, else /tmp)");
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);
  check_output_files({{"-o", output}}, {{"FILE", input}});
  const bool to_stdout = resolve_output(output).kind == OutputTarget::Kind::kStandardOutput;
  options.quiet = log_options.quiet;

  DlrmImport imported = import_dlrm_dataset(input, options);
  std::string text = dump_readable(nlohmann::ordered_json(tables_to_json(imported.tables))) + "\n";
  write_file_atomically(output, text);
  if (!to_stdout) spdlog::info("wrote {}", output);
  if (!log_options.quiet) {
    const DlrmImportSummary& s = imported.summary;
    std::string summary = fmt::format(
        "{}: {} tables, batch size {}, {} ids, mean pooling factor {:.3f}; largest table {} ids{}\n", input, s.tables,
        s.batch_size, s.total_ids, s.mean_pooling_factor, s.largest_table_ids, s.gunzipped ? " (gzipped)" : "");
    (to_stdout ? std::cerr : std::cout) << summary << std::flush;
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(import_dlrm_dataset, "import-dlrm-dataset",
                           "derive tables (rows, pooling factor, reuse histogram) from a dlrm_datasets file",
                           run_import_dlrm);

}  // namespace shardplan::cli
