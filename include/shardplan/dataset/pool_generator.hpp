#pragma once
// A synthetic stand-in for the table pool of Meta's dlrm_datasets (fbgemm_t856_bs65536, not reachable
// here): 856 tables with rows, pooling factor, width and a reuse histogram, shaped after what is
// published about the real pool. The distributions and their reasons are in docs/dataset.md.
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// The most tables a pool may have: about 240 MB of tables file and a minute to write, well within what a
// tables file may be (kMaxJsonFileBytes).
inline constexpr int kMaxPoolTables = 1'000'000;

struct PoolConfig {
  uint64_t seed = 1;
  int num_tables = 856;
  // Histograms describe one batch of this many samples (the real file's batch).
  int64_t reference_batch = 65536;
  // Mean pooling factor over the tables (the real pool's, per the paper's dataset description).
  double mean_pooling_factor = 15.8;
  ReuseHist target_hist = kDlrmAggregateReuseHist;
};

// Row counts: log10(rows) is a normal law truncated to [kMinLog10Rows, kMaxLog10Rows].
inline constexpr double kMinLog10Rows = 2.0;  // 100 rows
inline constexpr double kMaxLog10Rows = 7.6;  // ~40M rows, the largest hashed vocabularies of public DLRMs
inline constexpr double kPoolingFactorCap = 400.0;

// The width a production model would likely give a table: grows with the fourth root of the rows (the
// usual rule of thumb) and with how often the table is read, rounded to a power of two in [4, 256].
int realistic_width(int64_t rows, double pooling_factor);

// The pool, tables named t0 ... t{n-1}; pooling factors rounded to 4 decimals and histograms to 6
// (summing to exactly 1), the values the file holds. Throws SettingError naming the setting out of its
// range ("pool tables", "reference batch", "mean pooling factor", also when no pool of that many tables
// can reach it).
std::vector<Table> generate_pool(const PoolConfig& config);

}  // namespace shardplan
