#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/dataset/data_files.hpp"
#include "shardplan/dataset/pool_generator.hpp"
#include "shardplan/dataset/pool_stats.hpp"
#include "shardplan/dataset/reuse_calibration.hpp"

namespace shardplan {
namespace {

const std::vector<Table>& default_pool() {
  static const std::vector<Table> pool = generate_pool(PoolConfig{});
  return pool;
}

TEST(DatasetPool, HasTheRealPoolsShape) {
  const auto& pool = default_pool();
  ASSERT_EQ(pool.size(), 856u);
  PoolStats stats = pool_statistics(pool, 65536, kDlrmAggregateReuseHist);
  EXPECT_NEAR(stats.mean_pooling_factor, 15.8, 1e-3);
  // Many tables near 1, a long tail with a few above 100.
  EXPECT_GE(stats.tables_pooling_at_most_1_5, 150);
  EXPECT_GE(stats.tables_pooling_above_100, 3);
  EXPECT_LE(stats.tables_pooling_above_100, 50);
  EXPECT_LT(stats.pooling_factor.p50, 8.0);
  // Heavy-tailed rows from ~100 to tens of millions.
  EXPECT_GE(stats.rows.min, 100);
  EXPECT_LT(stats.rows.min, 1000);
  EXPECT_GE(stats.rows.max, 1e7);
  EXPECT_LE(stats.rows.max, std::pow(10.0, kMaxLog10Rows) + 1);
  EXPECT_GT(stats.rows.p90 / stats.rows.p50, 10.0);
}

TEST(DatasetPool, PooledHistogramMatchesThePublishedAggregate) {
  const auto& pool = default_pool();
  PoolStats stats = pool_statistics(pool, 65536, kDlrmAggregateReuseHist);
  EXPECT_LT(stats.pooled_l1, 0.05);
  // Every table's trace at the reference batch reproduces the table's own histogram.
  EXPECT_EQ(stats.tables_hist_not_reproduced, 0);
  // ... and the histograms differ from table to table.
  std::set<std::vector<double>> distinct;
  for (const auto& table : pool) {
    ASSERT_TRUE(table.reuse_hist.has_value()) << table.name;
    distinct.insert(std::vector<double>(table.reuse_hist->begin(), table.reuse_hist->end()));
  }
  EXPECT_GT(distinct.size(), 800u);
}

TEST(DatasetPool, OtherSeedsMeetTheTargetsToo) {
  PoolConfig config;
  config.seed = 2;
  std::vector<Table> pool = generate_pool(config);
  PoolStats stats = pool_statistics(pool, 65536, kDlrmAggregateReuseHist);
  EXPECT_NEAR(stats.mean_pooling_factor, 15.8, 1e-3);
  EXPECT_LT(stats.pooled_l1, 0.05);
  EXPECT_EQ(stats.tables_hist_not_reproduced, 0);
}

TEST(DatasetPool, TablesAreNamedWidthsAreRealisticValuesAreRounded) {
  const auto& pool = default_pool();
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const Table& t = pool[i];
    EXPECT_EQ(t.name, "t" + std::to_string(i));
    EXPECT_GE(t.dim, 4);
    EXPECT_LE(t.dim, 256);
    EXPECT_EQ(t.dim & (t.dim - 1), 0) << t.name << " width " << t.dim;
    EXPECT_EQ(t.pooling_factor, std::round(t.pooling_factor * 1e4) / 1e4);
    for (double h : *t.reuse_hist) EXPECT_EQ(h, std::round(h * 1e6) / 1e6);
  }
  EXPECT_LE(realistic_width(100, 1.0), realistic_width(1'000'000, 1.0));
  EXPECT_LE(realistic_width(1'000'000, 1.0), realistic_width(1'000'000, 100.0));
  EXPECT_EQ(realistic_width(40'000'000, 400.0), 256);
  EXPECT_EQ(realistic_width(1, 0.1), 4);
}

TEST(DatasetPool, SameSeedSameFileOtherSeedOtherFile) {
  PoolConfig config;
  config.num_tables = 200;
  std::string a = format_pool_file(generate_pool(config), "x");
  std::string b = format_pool_file(generate_pool(config), "x");
  config.seed = 99;
  std::string c = format_pool_file(generate_pool(config), "x");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(DatasetPool, FileRoundTripsThroughTheTablesLoader) {
  const auto& pool = default_pool();
  std::string text = format_pool_file(pool, "shard-plan gen-pool --seed 1");
  // One line per table, plus five framing lines: "{", "generated_by", "tables": [, "]" and "}".
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<std::ptrdiff_t>(pool.size()) + 5);
  std::vector<Table> loaded = parse_tables(nlohmann::json::parse(text), "pool.json");
  ASSERT_EQ(loaded.size(), pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    EXPECT_EQ(loaded[i].name, pool[i].name);
    EXPECT_EQ(loaded[i].rows, pool[i].rows);
    EXPECT_EQ(loaded[i].dim, pool[i].dim);
    EXPECT_EQ(loaded[i].pooling_factor, pool[i].pooling_factor);
    EXPECT_LT(reuse_hist_l1(*loaded[i].reuse_hist, *pool[i].reuse_hist), 1e-5);
  }
  // The loader renormalises histograms; the statistics hold for the loaded pool as well.
  PoolStats stats = pool_statistics(loaded, 65536, kDlrmAggregateReuseHist);
  EXPECT_LT(stats.pooled_l1, 0.05);
  EXPECT_EQ(stats.tables_hist_not_reproduced, 0);
}

TEST(DatasetPool, CalibrationMatchesATargetWithFewTables) {
  ReuseHist target = {0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<HistogramPrior> priors = {
      {200'000, 10'000'000, 1.0, 2.0}, {500'000, 10'000'000, 4.0, 1.5}, {100'000, 10'000'000, 2.0, 3.0}};
  CalibrationResult result = calibrate_histograms(priors, target);
  EXPECT_LT(result.max_column_error, 1e-9);
  BinCounts pooled{};
  int64_t total = 0;
  for (const auto& counts : result.rows_per_bin) {
    for (int b = 0; b < kReuseBins; ++b) {
      pooled[b] += counts[b];
      total += counts[b];
    }
  }
  ReuseHist hist{};
  for (int b = 0; b < kReuseBins; ++b) hist[b] = static_cast<double>(pooled[b]) / static_cast<double>(total);
  EXPECT_LT(reuse_hist_l1(hist, target), 0.01);
}

// The setting refused, in the library's terms ("" when none was).
std::string refused_setting(const PoolConfig& config) {
  try {
    generate_pool(config);
  } catch (const SettingError& e) {
    return e.setting();
  }
  return "";
}

TEST(DatasetPool, BadConfigsAreRefused) {
  PoolConfig config;
  config.num_tables = 0;
  EXPECT_EQ(refused_setting(config), "pool tables");
  config = PoolConfig{};
  config.mean_pooling_factor = 1e6;
  EXPECT_EQ(refused_setting(config), "mean pooling factor");
  config.mean_pooling_factor = 1.0;
  EXPECT_EQ(refused_setting(config), "mean pooling factor");
  config = PoolConfig{};
  config.reference_batch = 0;
  EXPECT_EQ(refused_setting(config), "reference batch");
}

}  // namespace
}  // namespace shardplan
