// The cache model's miss rate (cost_model/cache_model.hpp): FBGEMM's cache geometry, the closed forms at
// sigma = 0 and 1, set conflicts, and the least load factor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/cost_model/cache_model.hpp"

namespace shardplan {
namespace {

// A table whose batch touches D of about 34,000 of its 4 million rows (D/R ~ 0.9%), mostly once.
Table cold_table() {
  Table table;
  table.name = "cold";
  table.rows = 4'000'000;
  table.dim = 64;
  table.pooling_factor = 1.0;
  table.reuse_hist = ReuseHist{0.55, 0.2, 0.12, 0.07, 0.04, 0.02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  return table;
}

constexpr int64_t kBatch = 65536;

BinPlan plan_of(const Table& table) {
  return plan_bins(table.reuse_hist_or_default(), std::llround(kBatch * table.pooling_factor), table.rows);
}

TEST(CacheModel, CacheSlotsRoundUpToWholeSetsOf32) {
  EXPECT_EQ(kUvmCacheWays, 32);
  EXPECT_EQ(uvm_cache_slots(1000, 0.2), 224);  // floor(200) -> 7 sets
  EXPECT_EQ(uvm_cache_slots(3200, 0.1), 320);  // 320 rows: exactly 10 sets
  EXPECT_EQ(uvm_cache_slots(100, 0.339), 64);  // floor(33.9) = 33 -> 2 sets
  EXPECT_EQ(uvm_cache_slots(100, 0.329), 32);  // floor(32.9) = 32 -> (32 + 31) / 32 = 1 set
  EXPECT_EQ(uvm_cache_slots(100, 0.32), 32);   // 32 rows: one set
  EXPECT_EQ(uvm_cache_slots(10, 0.01), 32);    // at least one set
  EXPECT_EQ(uvm_cache_slots(1000, 0.0), 32);
  EXPECT_EQ(uvm_cache_slots(1000, -1.0), 32);
  EXPECT_EQ(uvm_cache_slots(1000, std::numeric_limits<double>::quiet_NaN()), 32);
  EXPECT_EQ(uvm_cache_slots(40'000'000, 0.05), 2'000'000);
  EXPECT_EQ(uvm_cache_slots(40'000'001, 0.05), 2'000'000);  // floor(2,000,000.05)
  for (int64_t rows : {1, 31, 33, 1000, 123'457}) {
    for (double clf : {0.01, 0.2, 0.5, 0.999}) {
      int64_t slots = uvm_cache_slots(rows, clf);
      EXPECT_EQ(slots % 32, 0);
      EXPECT_GE(slots, static_cast<int64_t>(std::floor(static_cast<double>(rows) * clf)));
      EXPECT_LE(slots, std::max<int64_t>(32, static_cast<int64_t>(std::floor(static_cast<double>(rows) * clf)) + 31));
    }
  }
}

TEST(CacheModel, PersistenceOfABinIsOneMinusEToTheMinusItsCount) {
  EXPECT_EQ(bin_persistence(0, 1.0), 0.0);
  EXPECT_NEAR(bin_persistence(1, 1.0), 1.0 - std::exp(-2.0), 1e-12);  // 0.865
  EXPECT_NEAR(bin_persistence(2, 1.0), 0.969, 0.001);
  EXPECT_NEAR(bin_persistence(3, 1.0), 0.998, 0.001);
  EXPECT_NEAR(bin_persistence(16, 1.0), 1.0, 1e-12);
  EXPECT_NEAR(bin_persistence(1, 0.5), 0.5 * (1.0 - std::exp(-2.0)), 1e-12);
  EXPECT_EQ(bin_persistence(5, 0.0), 0.0);
}

TEST(CacheModel, IndependentBatchesMissOneMinusTheCachedShare) {
  // sigma = 0: every batch is a fresh uniform draw, so a full cache of C rows hits C/R of it.
  const Table table = cold_table();
  const BinPlan plan = plan_of(table);
  for (double clf : {0.05, 0.1, 0.2, 0.5}) {
    const int64_t slots = uvm_cache_slots(table.rows, clf);
    CacheMissEstimate e = estimate_lru_misses(table, kBatch, slots, 0.0);
    const double cached = static_cast<double>(slots) / static_cast<double>(table.rows);
    EXPECT_EQ(e.distinct, static_cast<double>(plan.distinct));
    EXPECT_NEAR(e.miss_rate_unique, 1.0 - cached, 1e-12) << clf;
    EXPECT_NEAR(e.miss_rate_lookup, 1.0 - cached, 1e-9) << clf;
    EXPECT_NEAR(e.unique_misses, e.distinct * (1.0 - cached), 1e-6);
    EXPECT_LT(e.conflict_unique, 1e-6 * e.distinct);
    const double q = static_cast<double>(plan.distinct) / static_cast<double>(table.rows);
    EXPECT_NEAR(e.characteristic_time, std::log(1.0 - cached) / std::log1p(-q), 1e-6) << clf;
  }
}

TEST(CacheModel, PersistentPopularityMissesTheFreshRowsOutsideTheCache) {
  // sigma = 1 and W << R: m_u ~ (h_0 + sum_b h_b e^(-c_b)) (1 - clf).
  const Table table = cold_table();
  const ReuseHist hist = plan_of(table).histogram();
  double fresh_share = 0.0;
  for (int b = 0; b < kReuseBins; ++b) fresh_share += hist[b] * (b == 0 ? 1.0 : std::exp(-typical_bin_count(b)));
  for (double clf : {0.05, 0.1, 0.2, 0.5}) {
    const int64_t slots = uvm_cache_slots(table.rows, clf);
    CacheMissEstimate e = estimate_lru_misses(table, kBatch, slots, 1.0);
    const double expected = fresh_share * (1.0 - static_cast<double>(slots) / static_cast<double>(table.rows));
    EXPECT_NEAR(e.miss_rate_unique, expected, 0.01 * expected) << clf;  // within W_p / R ~ 0.4%
    EXPECT_GT(e.characteristic_time, 0.0);
    EXPECT_TRUE(std::isfinite(e.characteristic_time));
  }
  // The default argument is sigma = 1.
  const int64_t slots = uvm_cache_slots(table.rows, 0.2);
  EXPECT_EQ(estimate_lru_misses(table, kBatch, slots).miss_rate_unique,
            estimate_lru_misses(table, kBatch, slots, 1.0).miss_rate_unique);
}

TEST(CacheModel, MissesFallWithTheLoadFactorAndThePersistence) {
  const Table table = cold_table();
  for (double sigma : {0.0, 0.5, 1.0}) {
    double last = 2.0;
    for (double clf : {0.02, 0.05, 0.1, 0.2, 0.5, 0.9}) {
      double m = estimate_lru_misses(table, kBatch, uvm_cache_slots(table.rows, clf), sigma).miss_rate_unique;
      EXPECT_LT(m, last) << sigma << " " << clf;
      last = m;
    }
  }
  const int64_t slots = uvm_cache_slots(table.rows, 0.1);
  EXPECT_GT(estimate_lru_misses(table, kBatch, slots, 0.0).miss_rate_unique,
            estimate_lru_misses(table, kBatch, slots, 0.5).miss_rate_unique);
  EXPECT_GT(estimate_lru_misses(table, kBatch, slots, 0.5).miss_rate_unique,
            estimate_lru_misses(table, kBatch, slots, 1.0).miss_rate_unique);
  // The characteristic time grows with the cache.
  EXPECT_LT(estimate_lru_misses(table, kBatch, uvm_cache_slots(table.rows, 0.1), 0.5).characteristic_time,
            estimate_lru_misses(table, kBatch, uvm_cache_slots(table.rows, 0.5), 0.5).characteristic_time);
}

TEST(CacheModel, EverythingFitsOrNothingIsLookedUp) {
  Table table = cold_table();
  table.rows = 400'000;  // C >= R, and about 2.7 of a batch's rows per set: no set overflows
  CacheMissEstimate all = estimate_lru_misses(table, kBatch, uvm_cache_slots(table.rows, 1.0), 0.0);
  EXPECT_NEAR(all.unique_misses, 0.0, 1e-9);
  EXPECT_TRUE(std::isinf(all.characteristic_time));
  Table idle = cold_table();
  idle.pooling_factor = 0.0;
  CacheMissEstimate none = estimate_lru_misses(idle, kBatch, 1024, 1.0);
  EXPECT_EQ(none.distinct, 0.0);
  EXPECT_EQ(none.miss_rate_unique, 0.0);
  EXPECT_TRUE(std::isinf(none.characteristic_time));
  EXPECT_EQ(estimate_lru_misses(cold_table(), 0, 1024, 1.0).distinct, 0.0);
}

TEST(CacheModel, SetConflictsGrowAsTheCacheNearsTheBatch) {
  // Unique ids per set ~ Binomial(D, 1/S), mean 32 D / C; the overflow above 32 finds no way.
  const Table table = cold_table();
  const auto d = static_cast<double>(plan_of(table).distinct);
  auto conflict_share = [&](double slots_per_distinct) {
    const auto sets = static_cast<int64_t>(std::llround(slots_per_distinct * d / 32.0));
    CacheMissEstimate e = estimate_lru_misses(table, kBatch, 32 * sets, 1.0);
    return e.conflict_unique / e.distinct;
  };
  // Poisson(32 D / C)'s E[(X - 32)^+] / (32 D / C): 7.03% at C = D, 0.565% at 1.33 D, 1.49e-5 at 2 D.
  EXPECT_NEAR(conflict_share(1.0), 0.0703, 0.002);
  EXPECT_NEAR(conflict_share(1.33), 0.00565, 0.0003);
  EXPECT_NEAR(conflict_share(2.0), 1.49e-5, 0.2e-5);
  // Conflicts are misses: below C = D the model misses at least the overflow.
  const auto sets = static_cast<int64_t>(d / 64.0);  // C = D / 2
  CacheMissEstimate half = estimate_lru_misses(table, kBatch, 32 * sets, 1.0);
  EXPECT_GE(half.unique_misses, half.conflict_unique);
  EXPECT_GE(half.conflict_unique, d - 32.0 * static_cast<double>(sets) - 1e-6);
  EXPECT_LE(half.miss_rate_unique, 1.0);
  EXPECT_LE(half.miss_rate_lookup, 1.0);
  // One set holds 32 of the batch's rows at most.
  CacheMissEstimate one = estimate_lru_misses(table, kBatch, 32, 1.0);
  EXPECT_NEAR(one.conflict_unique, d - 32.0, 1e-9);
}

TEST(CacheModel, LeastLoadFactorHoldsTwiceTheBatch) {
  const Table table = cold_table();
  const int64_t d = plan_of(table).distinct;
  const double least = min_load_factor(table, kBatch);
  EXPECT_GT(least, 0.0);
  EXPECT_LT(least, 1.0);
  EXPECT_GE(uvm_cache_slots(table.rows, least), 2 * d);
  EXPECT_LT(uvm_cache_slots(table.rows, std::nextafter(least, 0.0)), 2 * d);
  EXPECT_NEAR(least, 2.0 * static_cast<double>(d) / static_cast<double>(table.rows), 32.0 / table.rows);

  // A batch of a few rows: one set of 32 holds it twice over at any load factor.
  Table tiny = cold_table();
  tiny.pooling_factor = 0.0002;  // 13 lookups
  EXPECT_DOUBLE_EQ(min_load_factor(tiny, kBatch), 1.0 / static_cast<double>(tiny.rows));
  EXPECT_GE(uvm_cache_slots(tiny.rows, min_load_factor(tiny, kBatch)), 2 * plan_of(tiny).distinct);

  // A batch that touches most of the table: no load factor below 1 holds it twice.
  Table small = cold_table();
  small.rows = 30'000;
  ASSERT_GT(2 * plan_of(small).distinct, uvm_cache_slots(small.rows, 0.9999));
  EXPECT_EQ(min_load_factor(small, kBatch), 1.0);
  Table empty = cold_table();
  empty.rows = 0;
  EXPECT_EQ(min_load_factor(empty, kBatch), 1.0);
}

}  // namespace
}  // namespace shardplan
