#pragma once
// Importing Meta's public dlrm_datasets files into tables.
//
// A file holds `torch.save((indices, offsets, lengths))` (the zip format of PyTorch >= 1.6), plain (.pt)
// or gzipped (.pt.gz, recognised by content). `lengths` has shape [tables, batch_size]: table t owns bags
// t*B .. (t+1)*B-1; `offsets` are the CSR offsets of those bags into `indices` (tables*B+1 entries, or
// tables*B without the closing one). Per table the importer derives (table_statistics)
//   rows           = max id + 1, but at least kDlrmMinRows,
//   pooling_factor = mean bag length,
//   reuse_hist     = the 17-bin histogram of reuse_hist.hpp over the table's distinct ids
//                    (all zeros for a table without lookups).
// The file is read table by table straight from disk: memory holds one table's ids (8 bytes each) plus a
// few MiB, however large the file. A gzipped file is first unpacked into an anonymous temporary file
// (see DlrmImportOptions::temp_dir), which needs the unpacked size in free disk space.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/importer/trace_statistics.hpp"

namespace shardplan {

// The files carry no embedding widths; tables get this one unless told otherwise (it is also FBGEMM's
// benchmark default, and the widest width the benchmark's tasks draw).
inline constexpr int kDlrmDefaultDim = 128;

struct DlrmImportOptions {
  int dim = kDlrmDefaultDim;  // width given to every table: a positive multiple of 4
  // Directory for the unpacked copy of a gzipped file; empty: $TMPDIR, else /tmp.
  std::string temp_dir;
  bool quiet = false;  // no progress on stderr
};

struct DlrmImportSummary {
  int64_t tables = 0;
  int64_t batch_size = 0;
  int64_t total_ids = 0;
  double mean_pooling_factor = 0.0;  // over all tables: total_ids / (tables * batch_size)
  int64_t largest_table_ids = 0;     // ids of the largest table, the importer's working set (8 bytes each)
  bool gunzipped = false;
  bool offsets_closed = true;  // offsets had tables*B+1 entries (false: tables*B)
};

struct DlrmImport {
  std::vector<Table> tables;  // named t0 .. t{N-1} in file order
  DlrmImportSummary summary;
};

// Reads a dlrm_datasets file. Throws InputError naming the file and the problem for anything missing,
// truncated or inconsistent (not a torch.save zip, wrong tuple, wrong shapes or dtypes, offsets that
// disagree with lengths, negative ids); RuntimeFailure if the gzip temporary cannot be written.
// Progress is logged through spdlog.
DlrmImport import_dlrm_dataset(const std::string& path, const DlrmImportOptions& options = {});

}  // namespace shardplan
