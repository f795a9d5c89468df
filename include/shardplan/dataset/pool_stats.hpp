#pragma once
// What gen-pool reports about a pool (and what the tests check): pooling factors, row counts and the
// reuse histogram pooled over all tables' synthetic traces at the reference batch.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// Lower nearest-rank percentiles (q in [0, 1]) of a sample.
struct Percentiles {
  double min = 0.0;
  double p10 = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double max = 0.0;
};
Percentiles percentiles(std::vector<double> values);

struct PoolStats {
  std::size_t num_tables = 0;
  double mean_pooling_factor = 0.0;
  Percentiles pooling_factor;
  int tables_pooling_at_most_1_5 = 0;  // single-valued features and the like
  int tables_pooling_above_100 = 0;
  Percentiles rows;
  Percentiles distinct_rows;  // distinct rows one reference batch touches, per table
  int64_t total_distinct_rows = 0;
  // Over all tables' traces at the reference batch: bin b's share of all distinct (table, row) pairs.
  ReuseHist pooled_hist{};
  double pooled_l1 = 0.0;  // distance to the target histogram
  // Tables whose trace at the reference batch does not reproduce their histogram (L1 > 1e-4), and the
  // largest such distance.
  int tables_hist_not_reproduced = 0;
  double max_table_l1 = 0.0;
  int64_t total_bytes = 0;  // fp32 weights at the tables' own widths
  int64_t largest_table_bytes = 0;
};

PoolStats pool_statistics(const std::vector<Table>& tables, int64_t reference_batch, const ReuseHist& target);

// Human-readable lines (no trailing newline on each).
std::vector<std::string> format_pool_stats(const PoolStats& stats);

}  // namespace shardplan
