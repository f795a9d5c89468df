// The LRU simulation of FBGEMM's cache (costs/cache_simulation.hpp) and the cache model's check against it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/costs/cache_simulation.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {
namespace {

Table pool_table(const char* name, int64_t rows, double pooling_factor, const ReuseHist& hist) {
  Table table;
  table.name = name;
  table.rows = rows;
  table.dim = 32;
  table.pooling_factor = pooling_factor;
  table.reuse_hist = hist;
  return table;
}

// Rows of data/pool.json (gen-pool --seed 1): a third singletons; no singletons but many pairs; every row
// reused hundreds of times; a mix.
Table t437() {
  return pool_table("t437", 67743, 0.9878,
                    {0.288134, 0.138418, 0.152542, 0.149718, 0.115819, 0.062147, 0.028249, 0.016949, 0.011299, 0.008475,
                     0.00565, 0.00565, 0.00565, 0.00565, 0.002825, 0.002825, 0.0});
}
Table t394() {
  return pool_table("t394", 35167, 0.9128,
                    {0.0, 0.242678, 0.230126, 0.205021, 0.146444, 0.07113, 0.029289, 0.016736, 0.012552, 0.008368,
                     0.008368, 0.004184, 0.008368, 0.008368, 0.004184, 0.004184, 0.0});
}
Table t45() {
  return pool_table("t45", 6325, 64.4317,
                    {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.084459, 0.108108, 0.148649, 0.182432, 0.175676,
                     0.158784, 0.141892});
}
Table t220() {
  return pool_table("t220", 84131, 0.4845,
                    {0.01619, 0.028571, 0.089524, 0.199048, 0.275238, 0.20381, 0.101905, 0.049524, 0.022857, 0.009524,
                     0.002857, 0.000952, 0.0, 0.0, 0.0, 0.0, 0.0});
}

// `count` ids, from `from` on, that FBGEMM puts in set `set` of `sets`.
std::vector<int64_t> ids_in_set(int64_t set, int64_t sets, int count, int64_t from = 0) {
  std::vector<int64_t> ids;
  for (int64_t id = from; static_cast<int>(ids.size()) < count; ++id) {
    if (cache_set_of(id, sets) == set) ids.push_back(id);
  }
  return ids;
}

BatchRows rows_of(const std::vector<int64_t>& ids, int64_t count = 1) {
  return BatchRows{ids, std::vector<int64_t>(ids.size(), count)};
}

TEST(LruCacheSimulation, SetsAreFbgemmsCacheSlot) {
  // fmix64(id) % sets, values from FBGEMM's cache_slot computed independently.
  EXPECT_EQ(cache_set_of(0, 7), 0);
  EXPECT_EQ(cache_set_of(1, 7), 0);
  EXPECT_EQ(cache_set_of(12345, 1000), 753);
  EXPECT_EQ(cache_set_of(987654321, 4096), 877);
  EXPECT_EQ(cache_set_of((int64_t{1} << 40) + 3, 12345), 1531);
  // Roughly uniform over the sets.
  std::vector<int> per_set(16, 0);
  for (int64_t id = 0; id < 16000; ++id) per_set[static_cast<std::size_t>(cache_set_of(id, 16))] += 1;
  for (int n : per_set) EXPECT_NEAR(n, 1000, 150);
}

TEST(LruCacheSimulation, MoreThan32IdsInOneSetConflict) {
  constexpr int64_t kSets = 2;
  LruCacheSimulator cache(1000, kSets * 32);
  std::vector<int64_t> crowd = ids_in_set(0, kSets, 40);
  std::vector<int64_t> other = ids_in_set(1, kSets, 3);
  BatchRows batch = rows_of(crowd, 3);
  for (int64_t id : other) {
    batch.ids.push_back(id);
    batch.counts.push_back(5);
  }
  // First batch: all 43 miss; set 0 takes the 32 lowest ids, the 8 highest find no way.
  LruCacheStats first = cache.access(batch);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(first.requested_indices, 40 * 3 + 3 * 5);
  EXPECT_EQ(first.unique_indices, 43);
  EXPECT_EQ(first.unique_misses, 43);
  EXPECT_EQ(first.conflict_unique_misses, 8);
  EXPECT_EQ(first.conflict_misses, 8 * 3);
  EXPECT_EQ(first.missed_lookups, 40 * 3 + 3 * 5);
  EXPECT_EQ(cache.valid_slots(), 35);
  // Same batch again: the 32 cached ids and set 1's 3 hit and keep their ways, so the 8 conflict again.
  LruCacheStats second = cache.access(batch);
  EXPECT_EQ(second.unique_misses, 8);
  EXPECT_EQ(second.conflict_unique_misses, 8);
  EXPECT_EQ(second.conflict_misses, 24);
  EXPECT_EQ(second.missed_lookups, 24);
  // The 8 alone: they evict 8 of the others (none is stamped now).
  std::vector<int64_t> late(crowd.end() - 8, crowd.end());
  LruCacheStats third = cache.access(rows_of(late));
  EXPECT_EQ(third.unique_misses, 8);
  EXPECT_EQ(third.conflict_unique_misses, 0);
  // Conflicts counted per lookup; the rates.
  EXPECT_DOUBLE_EQ(second.miss_rate_unique(), 8.0 / 43.0);
  EXPECT_DOUBLE_EQ(second.conflict_rate_unique(), 8.0 / 43.0);
  EXPECT_DOUBLE_EQ(second.miss_rate_lookup(), 24.0 / 135.0);
}

TEST(LruCacheSimulation, InsertsTakeTheOldestWaysAndSpareThisBatchsHits) {
  constexpr int64_t kSets = 4;
  LruCacheSimulator cache(100'000, kSets * 32);
  std::vector<int64_t> ids = ids_in_set(2, kSets, 48);
  std::vector<int64_t> a(ids.begin(), ids.begin() + 32);
  std::vector<int64_t> b(ids.begin() + 32, ids.end());
  std::vector<int64_t> recent(a.begin(), a.begin() + 16);
  std::vector<int64_t> stale(a.begin() + 16, a.end());
  EXPECT_EQ(cache.access(rows_of(a)).unique_misses, 32);      // batch 1 fills set 2
  EXPECT_EQ(cache.access(rows_of(recent)).unique_misses, 0);  // batch 2 restamps half
  EXPECT_EQ(cache.access(rows_of(b)).unique_misses, 16);      // batch 3: 16 new ids take the 16 stalest ways
  std::vector<int64_t> kept = recent;
  kept.insert(kept.end(), b.begin(), b.end());
  EXPECT_EQ(cache.access(rows_of(kept)).unique_misses, 0);
  EXPECT_EQ(cache.access(rows_of(stale)).unique_misses, 16);
  // A batch's hits hold their ways: 32 hits and one more id leave the newcomer without a way.
  std::vector<int64_t> full = stale;
  full.insert(full.end(), b.begin(), b.end());  // cached now: stale (batch 5) and b (batch 4)
  full.push_back(ids_in_set(2, kSets, 1, ids.back() + 1)[0]);
  LruCacheStats crowded = cache.access(rows_of(full));
  EXPECT_EQ(crowded.unique_misses, 1);
  EXPECT_EQ(crowded.conflict_unique_misses, 1);
  EXPECT_EQ(cache.batches(), 6);
  EXPECT_EQ(cache.valid_slots(), 32);
}

TEST(LruCacheSimulation, MeasuresOnlyAfterTheWarmUp) {
  const Table table = t437();
  std::vector<IndexTrace> traces = synthesize_trace_sequence(table, 4096, 12, 5, 1.0);
  const int64_t slots = uvm_cache_slots(table.rows, 0.2);
  LruCacheStats all = simulate_lru_cache(traces, table.rows, slots, 0);
  LruCacheStats late = simulate_lru_cache(traces, table.rows, slots, 4);
  EXPECT_EQ(all.calls, 12);
  EXPECT_EQ(late.calls, 8);
  const int64_t lookups = trace_lookups(table, 4096);
  EXPECT_EQ(all.requested_indices, 12 * lookups);
  EXPECT_EQ(late.requested_indices, 8 * lookups);
  EXPECT_EQ(late.unique_indices, 8 * trace_bin_plan(table, 4096).distinct);
  EXPECT_GE(all.unique_misses - late.unique_misses, trace_bin_plan(table, 4096).distinct);  // the cold start
  EXPECT_EQ(simulate_lru_cache(traces, table.rows, slots, 100).calls, 0);
  EXPECT_THROW(simulate_lru_cache(traces, table.rows, slots, -1), InputError);
}

TEST(LruCacheSimulation, TracesAndTheirDistinctRowsSimulateAlike) {
  // What the check feeds the simulator (a sequence's distinct rows and counts) is what its traces hold.
  const Table table = t394();
  for (double sigma : {0.0, 0.5, 1.0}) {
    std::vector<IndexTrace> traces = synthesize_trace_sequence(table, 8192, 30, 9, sigma);
    const int64_t slots = uvm_cache_slots(table.rows, 0.1);
    LruCacheStats from_traces = simulate_lru_cache(traces, table.rows, slots, 10);
    TraceSequence sequence(table, 8192, 9, sigma);
    LruCacheSimulator cache(table.rows, slots);
    LruCacheStats from_rows;
    for (int t = 0; t < 30; ++t) {
      LruCacheStats batch = cache.access(sequence.next_rows());
      if (t >= 10) from_rows += batch;
    }
    EXPECT_EQ(from_traces.requested_indices, from_rows.requested_indices) << sigma;
    EXPECT_EQ(from_traces.unique_indices, from_rows.unique_indices) << sigma;
    EXPECT_EQ(from_traces.unique_misses, from_rows.unique_misses) << sigma;
    EXPECT_EQ(from_traces.conflict_unique_misses, from_rows.conflict_unique_misses) << sigma;
    EXPECT_EQ(from_traces.conflict_misses, from_rows.conflict_misses) << sigma;
    EXPECT_EQ(from_traces.missed_lookups, from_rows.missed_lookups) << sigma;
  }
}

TEST(LruCacheSimulation, IndependentBatchesMissOneMinusTheCachedShare) {
  // sigma = 0: each batch is a uniform draw of D rows, independent of the cache's C rows, so once every
  // slot is filled the expected miss rate is exactly 1 - C/R.
  const Table table = pool_table("uniform", 50'000, 1.0, {0.5, 0.3, 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  for (double clf : {0.1, 0.3}) {
    const int64_t slots = uvm_cache_slots(table.rows, clf);
    TraceSequence sequence(table, 1024, 3, 0.0);
    LruCacheSimulator cache(table.rows, slots);
    int warmup = 0;
    for (; cache.valid_slots() < cache.slots(); ++warmup) cache.access(sequence.next_rows());
    LruCacheStats measured;
    for (int t = 0; t < 400; ++t) measured += cache.access(sequence.next_rows());
    const double exact = 1.0 - static_cast<double>(slots) / static_cast<double>(table.rows);
    EXPECT_NEAR(measured.miss_rate_unique(), exact, 0.01) << clf << " after " << warmup << " batches";
    EXPECT_EQ(measured.conflict_unique_misses, 0) << clf;
    EXPECT_NEAR(estimate_lru_misses(table, 1024, slots, 0.0).miss_rate_unique, exact, 1e-12);
  }
}

TEST(LruCacheSimulation, SetConflictsAsTheModelCountsThem) {
  // Near C = D a set often draws more than 32 of a batch's rows; the hits keep their ways, so the overflow
  // above 32 finds none: K = S E[(X - 32)^+], X ~ Binomial(D, 1/S).
  const Table table = pool_table("uniform", 2'000'000, 1.0, {0.5, 0.3, 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  const int64_t d = trace_bin_plan(table, 4096).distinct;
  for (double slots_per_distinct : {1.0, 1.33}) {
    const int64_t slots = 32 * std::llround(slots_per_distinct * static_cast<double>(d) / 32.0);
    TraceSequence sequence(table, 4096, 8, 0.5);
    LruCacheSimulator cache(table.rows, slots);
    LruCacheStats measured;
    for (int t = 0; t < 300; ++t) {
      LruCacheStats batch = cache.access(sequence.next_rows());
      if (t >= 100) measured += batch;
    }
    const CacheMissEstimate e = estimate_lru_misses(table, 4096, slots, 0.5);
    const double predicted = e.conflict_unique / e.distinct;
    EXPECT_NEAR(measured.conflict_rate_unique(), predicted, 0.15 * predicted + 0.0005) << slots_per_distinct;
    EXPECT_GE(measured.unique_misses, measured.conflict_unique_misses);
  }
}

TEST(LruCacheSimulation, RefusesWhatFbgemmCouldNotBeGiven) {
  EXPECT_THROW(LruCacheSimulator(0, 32), InputError);
  EXPECT_THROW(LruCacheSimulator(100, 0), InputError);
  EXPECT_THROW(LruCacheSimulator(100, 48), InputError);
  LruCacheSimulator cache(100, 64);
  EXPECT_THROW(cache.access(rows_of({100})), InputError);
  EXPECT_THROW(cache.access(rows_of({-1})), InputError);
  EXPECT_THROW(cache.access(rows_of({7, 7})), InputError);
  EXPECT_THROW(cache.access(BatchRows{{1, 2}, {1}}), InputError);
  cache.access(rows_of({3}));
  EXPECT_THROW(cache.access(rows_of({3, 3})), InputError);  // the second one a hit stamped this batch
}

TEST(CacheModelCheck, PredictsTheSimulationWithinTenPointsOnPoolTables) {
  // Issue #46's target on a few pool tables at the h100 model's batch (the full check: docs/cost-models.md).
  CacheCheckOptions options;
  options.warmup_row_budget = 5'000'000;
  for (const Table& table : {t437(), t394(), t45(), t220()}) {
    const double least = min_load_factor(table, 65536);
    std::vector<double> levels;
    for (double clf : {0.05, 0.1, 0.2, 0.5}) {
      if (clf >= least) levels.push_back(clf);
    }
    ASSERT_FALSE(levels.empty()) << table.name;
    for (double sigma : {1.0, 0.5, 0.0}) {
      CacheCheckRun run = check_cache_model(table, 65536, levels, sigma, 7, options);
      EXPECT_EQ(run.scale, 1);
      EXPECT_EQ(run.levels.size(), levels.size());
      for (const CacheCheckLevel& level : run.levels) {
        EXPECT_EQ(level.simulated.calls, run.measured_batches);
        EXPECT_GE(level.cache_slots, 2 * static_cast<int64_t>(level.predicted.distinct));
        EXPECT_NEAR(level.predicted.miss_rate_unique, level.simulated.miss_rate_unique(), 0.10)
            << table.name << " clf " << level.load_factor << " sigma " << sigma;
        EXPECT_LT(level.simulated.conflict_rate_unique(), 0.001) << table.name;
      }
    }
  }
}

TEST(CacheModelCheck, ScalesBigTablesDown) {
  Table big = t437();
  big.rows = 67743 * 40;
  big.pooling_factor = 0.9878 * 40;  // D ~ 14,700
  CacheCheckOptions options;
  options.measured_batches = 20;
  options.warmup_row_budget = 200'000;
  CacheCheckRun run = check_cache_model(big, 65536, {0.2}, 0.0, 1, options);
  EXPECT_EQ(run.scale, trace_bin_plan(big, 65536).distinct / 2000);
  EXPECT_GE(run.simulated_distinct, 2000);
  EXPECT_EQ(run.simulated_rows, std::llround(static_cast<double>(big.rows) / static_cast<double>(run.scale)));
  EXPECT_EQ(run.measured_batches, 20);
  EXPECT_EQ(run.levels[0].warmup_end, WarmupEnd::kBudget);
  EXPECT_EQ(run.levels[0].warmup_batches, 200'000 / run.simulated_distinct);
  EXPECT_EQ(run.levels[0].cache_slots, uvm_cache_slots(big.rows, 0.2));
  EXPECT_EQ(run.levels[0].simulated_slots, uvm_cache_slots(run.simulated_rows, 0.2));
}

}  // namespace
}  // namespace shardplan
