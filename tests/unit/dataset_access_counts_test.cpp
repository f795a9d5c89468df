#include <gtest/gtest.h>

#include <numeric>

#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/dataset/access_counts.hpp"

namespace shardplan {
namespace {

ReuseHist hist_of_counts(const BinCounts& counts) {
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  ReuseHist hist{};
  for (int b = 0; b < kReuseBins; ++b) hist[b] = static_cast<double>(counts[b]) / static_cast<double>(total);
  return hist;
}

ReuseHist hist_of_access_counts(const std::vector<int64_t>& counts) {
  ReuseHistBuilder builder;
  for (int64_t c : counts) builder.add_row(c);
  return builder.finish();
}

TEST(DatasetAccessCounts, BinRangesAgreeWithReuseBin) {
  EXPECT_EQ(reuse_bin_range(0).lo, 1);
  EXPECT_EQ(reuse_bin_range(0).hi, 1);
  EXPECT_EQ(reuse_bin_range(1).lo, 2);
  EXPECT_EQ(reuse_bin_range(1).hi, 2);
  EXPECT_EQ(reuse_bin_range(2).lo, 3);
  EXPECT_EQ(reuse_bin_range(2).hi, 4);
  EXPECT_EQ(reuse_bin_range(16).lo, 32769);
  for (int b = 0; b < kReuseBins; ++b) {
    BinRange range = reuse_bin_range(b);
    EXPECT_EQ(reuse_bin(range.lo), b);
    if (b < kReuseBins - 1) {
      EXPECT_EQ(reuse_bin(range.hi), b);
      EXPECT_EQ(reuse_bin(range.hi + 1), b + 1);
    }
    EXPECT_GE(typical_bin_count(b), static_cast<double>(range.lo));
    if (b < kReuseBins - 1) {
      EXPECT_LE(typical_bin_count(b), static_cast<double>(range.hi));
    }
  }
}

TEST(DatasetAccessCounts, ApportionSumsAndStaysWithinOne) {
  // The published aggregate sums to 1.001 (rounding); apportioning normalises it.
  double sum = std::accumulate(kDlrmAggregateReuseHist.begin(), kDlrmAggregateReuseHist.end(), 0.0);
  for (int64_t d : {1, 7, 100, 1234, 99991}) {
    BinCounts counts = apportion_rows(kDlrmAggregateReuseHist, d);
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), d);
    for (int b = 0; b < kReuseBins; ++b) {
      double share = kDlrmAggregateReuseHist[b] / sum * static_cast<double>(d);
      EXPECT_LT(std::abs(static_cast<double>(counts[b]) - share), 1.0);
    }
  }
}

TEST(DatasetAccessCounts, HistogramOfTheFormKOverDIsReproducedExactly) {
  BinCounts rows{};
  rows[0] = 40;
  rows[3] = 25;
  rows[6] = 20;
  rows[10] = 10;
  rows[13] = 5;
  ReuseHist hist = hist_of_counts(rows);
  // Lookups that these 100 rows spend at their bins' typical counts.
  double lookups = 0.0;
  for (int b = 0; b < kReuseBins; ++b) lookups += static_cast<double>(rows[b]) * typical_bin_count(b);
  BinPlan plan = plan_bins(hist, static_cast<int64_t>(lookups), 1'000'000);
  EXPECT_TRUE(plan.realisable);
  EXPECT_EQ(plan.distinct, 100);
  EXPECT_EQ(plan.rows_per_bin, rows);
  EXPECT_LT(reuse_hist_l1(plan.histogram(), hist), 1e-12);
}

TEST(DatasetAccessCounts, DrawnCountsSumToTheLookupsAndKeepTheirBins) {
  Rng rng(9);
  for (int64_t lookups : {int64_t{65536}, int64_t{1'310'720}, int64_t{12'000'000}}) {
    BinPlan plan = plan_bins(kDlrmAggregateReuseHist, lookups, 50'000'000);
    ASSERT_TRUE(plan.realisable) << lookups;
    std::vector<int64_t> counts = draw_access_counts(plan, lookups, rng);
    ASSERT_EQ(static_cast<int64_t>(counts.size()), plan.distinct);
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), lookups);
    EXPECT_EQ(hist_of_access_counts(counts), plan.histogram());
  }
  // Enough lookups: the aggregate histogram is met within rounding.
  BinPlan big = plan_bins(kDlrmAggregateReuseHist, 1'310'720, 50'000'000);
  EXPECT_LT(reuse_hist_l1(big.histogram(), kDlrmAggregateReuseHist), 0.05);
}

TEST(DatasetAccessCounts, TooFewLookupsStillGiveExactTotalsWithinTheRows) {
  Rng rng(4);
  // The aggregate needs rows accessed over 32768 times; 5000 lookups cannot realise it.
  BinPlan plan = plan_bins(kDlrmAggregateReuseHist, 5000, 1'000'000);
  EXPECT_FALSE(plan.realisable);
  std::vector<int64_t> counts = draw_access_counts(plan, 5000, rng);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), 5000);
  for (int64_t c : counts) EXPECT_GE(c, 1);

  // A 5-row table read 1000 times touches at most its 5 rows.
  ReuseHist cold{};
  cold[0] = 1.0;
  BinPlan tiny = plan_bins(cold, 1000, 5);
  EXPECT_LE(tiny.distinct, 5);
  counts = draw_access_counts(tiny, 1000, rng);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), 1000);

  BinPlan none = plan_bins(cold, 0, 100);
  EXPECT_EQ(none.distinct, 0);
  EXPECT_TRUE(draw_access_counts(none, 0, rng).empty());
}

}  // namespace
}  // namespace shardplan
