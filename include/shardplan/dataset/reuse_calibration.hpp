#pragma once
// Per-table reuse histograms that differ from table to table yet, pooled over all tables' traces, match
// a target aggregate histogram (the one published with dlrm_datasets).
//
// Pooling is over distinct rows: the aggregate's bin b is sum_t D_t h_t[b] / sum_t D_t, where D_t is the
// number of distinct rows table t's batch touches. D_t is not free: the counts of t's rows must add up
// to its lookups N_t, so D_t = N_t / sum_b h_t[b] m_b (m_b: typical count of a row in bin b). Finding
// the per-table distinct-row numbers n[t][b] is therefore a matrix-scaling problem: row t must spend
// sum_b n[t][b] m_b = N_t lookups, column b must hold target[b] * D_total rows
// (D_total = sum_t N_t / sum_b target[b] m_b). Iterative proportional fitting (Sinkhorn) from a
// per-table prior n[t][b] ~ prior[t][b] solves it and keeps each table's own shape.
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/dataset/access_counts.hpp"

namespace shardplan {

struct HistogramPrior {
  int64_t lookups = 0;  // N_t at the reference batch
  int64_t rows = 1;
  double center = 0.0;  // bin around which the table's distinct rows concentrate
  double spread = 2.0;  // in bins (a Gaussian bump over the bin index)
};

struct CalibrationResult {
  std::vector<BinCounts> rows_per_bin;  // per table: distinct rows in each bin (sum: D_t)
  int iterations = 0;
  double max_column_error = 0.0;      // largest relative miss of a bin's target after fitting
  std::vector<int> unreachable_bins;  // target bins no table may use (dropped from the target)
};

// Bins a table may use: a row in bin b takes at least b's lower count, so b is allowed only when that is
// at most half the table's lookups; and bins whose typical count would make the table touch more
// distinct rows than it has are excluded (the unbounded last bin never is: its counts can grow).
bool bin_allowed(int bin, int64_t lookups, int64_t rows);

// Target bins that no table may use (possible in a small pool) are dropped and the rest renormalised.
CalibrationResult calibrate_histograms(const std::vector<HistogramPrior>& priors, const ReuseHist& target);

}  // namespace shardplan
