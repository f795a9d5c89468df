#include "shardplan/dataset/pool_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {

namespace {

constexpr double kReproducedL1 = 1e-4;

}  // namespace

Percentiles percentiles(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    return values[static_cast<std::size_t>(std::floor(q * static_cast<double>(values.size() - 1)))];
  };
  p.min = values.front();
  p.p10 = at(0.1);
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.max = values.back();
  return p;
}

PoolStats pool_statistics(const std::vector<Table>& tables, int64_t reference_batch, const ReuseHist& target) {
  PoolStats stats;
  stats.num_tables = tables.size();
  if (tables.empty()) return stats;
  std::vector<double> pooling;
  std::vector<double> rows;
  std::vector<double> distinct;
  BinCounts pooled{};
  double pooling_sum = 0.0;
  for (const Table& table : tables) {
    pooling_sum += table.pooling_factor;
    pooling.push_back(table.pooling_factor);
    rows.push_back(static_cast<double>(table.rows));
    if (table.pooling_factor <= 1.5) stats.tables_pooling_at_most_1_5 += 1;
    if (table.pooling_factor > 100.0) stats.tables_pooling_above_100 += 1;
    int64_t bytes = table_memory_bytes(table, Optimizer::kSgd);
    stats.total_bytes += bytes;
    stats.largest_table_bytes = std::max(stats.largest_table_bytes, bytes);

    // A trace's histogram is exactly its bin plan's (the counts fill the planned bins), so the pooled
    // histogram over all traces needs no trace to be materialised.
    BinPlan plan = trace_bin_plan(table, reference_batch);
    distinct.push_back(static_cast<double>(plan.distinct));
    stats.total_distinct_rows += plan.distinct;
    for (int b = 0; b < kReuseBins; ++b) pooled[b] += plan.rows_per_bin[b];
    double l1 = reuse_hist_l1(plan.histogram(), table.reuse_hist_or_default());
    if (l1 > kReproducedL1) {
      stats.tables_hist_not_reproduced += 1;
      stats.max_table_l1 = std::max(stats.max_table_l1, l1);
    }
  }
  stats.mean_pooling_factor = pooling_sum / static_cast<double>(tables.size());
  stats.pooling_factor = percentiles(std::move(pooling));
  stats.rows = percentiles(std::move(rows));
  stats.distinct_rows = percentiles(std::move(distinct));
  if (stats.total_distinct_rows > 0) {
    for (int b = 0; b < kReuseBins; ++b) {
      stats.pooled_hist[b] = static_cast<double>(pooled[b]) / static_cast<double>(stats.total_distinct_rows);
    }
  }
  stats.pooled_l1 = reuse_hist_l1(stats.pooled_hist, target);
  return stats;
}

std::vector<std::string> format_pool_stats(const PoolStats& s) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("tables: {}", s.num_tables));
  lines.push_back(fmt::format(
      "mean pooling factor: {:.4f} (min {:.4g}, p10 {:.4g}, median {:.4g}, p90 {:.4g}, max {:.4g}; "
      "{} tables at most 1.5, {} above 100)",
      s.mean_pooling_factor, s.pooling_factor.min, s.pooling_factor.p10, s.pooling_factor.p50, s.pooling_factor.p90,
      s.pooling_factor.max, s.tables_pooling_at_most_1_5, s.tables_pooling_above_100));
  lines.push_back(fmt::format("rows: min {:.0f}, p10 {:.0f}, median {:.0f}, p90 {:.0f}, max {:.0f}", s.rows.min,
                              s.rows.p10, s.rows.p50, s.rows.p90, s.rows.max));
  lines.push_back(
      fmt::format("pooled reuse histogram L1 distance to the dlrm_datasets aggregate: {:.4f}", s.pooled_l1));
  std::string bins;
  for (double h : s.pooled_hist) bins += fmt::format(" {:.3f}", h);
  lines.push_back(fmt::format("pooled reuse histogram:{}", bins));
  lines.push_back(
      fmt::format("distinct rows per table and batch: min {:.0f}, p10 {:.0f}, median {:.0f}, p90 {:.0f}, "
                  "max {:.0f}; {} in all",
                  s.distinct_rows.min, s.distinct_rows.p10, s.distinct_rows.p50, s.distinct_rows.p90,
                  s.distinct_rows.max, s.total_distinct_rows));
  lines.push_back(fmt::format("tables whose trace does not reproduce their histogram: {} (max L1 {:.4f})",
                              s.tables_hist_not_reproduced, s.max_table_l1));
  lines.push_back(fmt::format("memory at the tables' widths (fp32): {} in all, largest table {}",
                              format_bytes(s.total_bytes), format_bytes(s.largest_table_bytes)));
  return lines;
}

}  // namespace shardplan
