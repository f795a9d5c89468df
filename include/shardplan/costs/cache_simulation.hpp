#pragma once
// FBGEMM's LRU cache of a table kept in host memory (TorchRec's fused_uvm_caching, CacheAlgorithm.LRU),
// simulated on index traces, and the check of the cache model (cost_model/cache_model.hpp) against it.
//
// The simulation follows FBGEMM's kernels (docs/design/uvm-caching.md 3.3; FBGEMM's
// split_embeddings_cache/lru_cache_find.cu and lru_cache_populate.cu): the clock ticks once per batch; the
// batch's unique ids are looked up once each in set fmix64(id) mod S (MurmurHash3's 64-bit finaliser) of
// 32 ways; a hit stamps its way with the batch's time, which keeps the way for the batch; the misses of a
// set, in ascending id order, take its ways stamped before the batch, oldest first (ties: lower way
// first; FBGEMM's warp sort leaves them in an order of its own), and the misses left without a way are
// conflict misses, which FBGEMM serves per lookup from UVM. Empty ways are stamped 0, before any batch.
// A single table's cache, as TorchRec builds one per TBE: its ids are the table's rows.
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {

// FBGEMM's counters (UVMCacheStatsIndex, read with gather_uvm_cache_stats), summed over batches, and the
// lookups of the missed rows, which FBGEMM does not count.
struct LruCacheStats {
  int64_t calls = 0;                   // batches
  int64_t requested_indices = 0;       // lookups
  int64_t unique_indices = 0;          // each batch's distinct ids
  int64_t unique_misses = 0;           // distinct ids not cached when looked up (inserted + conflict)
  int64_t conflict_unique_misses = 0;  // of those, the ids that found no way in their set
  int64_t conflict_misses = 0;         // lookups of the conflict ids (read from UVM one by one)
  int64_t missed_lookups = 0;          // lookups of all missed ids (not one of FBGEMM's counters)

  double miss_rate_unique() const;      // unique_misses / unique_indices (0 without any)
  double conflict_rate_unique() const;  // conflict_unique_misses / unique_indices
  double miss_rate_lookup() const;      // missed_lookups / requested_indices
  LruCacheStats& operator+=(const LruCacheStats& other);
};

// The set FBGEMM's cache_slot gives `id` among `sets` sets.
int64_t cache_set_of(int64_t id, int64_t sets);

// The cache, one batch at a time.
class LruCacheSimulator {
 public:
  // `cache_slots`: a positive multiple of 32 (uvm_cache_slots(rows, load_factor) gives FBGEMM's). Throws
  // InputError otherwise, or when rows < 1.
  LruCacheSimulator(int64_t rows, int64_t cache_slots);

  // One batch, as its distinct ids and their lookups (ids in [0, rows), distinct; InputError otherwise).
  // Returns the batch's counters.
  LruCacheStats access(const BatchRows& batch);

  int64_t sets() const { return sets_; }
  int64_t slots() const { return sets_ * kUvmCacheWays; }
  int64_t valid_slots() const { return valid_; }  // ways holding a row
  int64_t batches() const { return now_; }

 private:
  struct Miss {
    int64_t set;
    int64_t id;
    int64_t count;
  };
  int64_t rows_ = 0;
  int64_t sets_ = 0;
  int64_t valid_ = 0;
  int32_t now_ = 0;
  std::vector<int64_t> tags_;    // sets x 32: the row a way holds, -1 when empty
  std::vector<int32_t> stamps_;  // sets x 32: the batch that last used the way (0: none)
  std::vector<Miss> misses_;
  std::vector<int64_t> sets_of_batch_;
};

// A trace's distinct ids (ascending) and their lookups.
BatchRows batch_rows(const IndexTrace& trace);

// The counters of a cache of `cache_slots` slots over `batches` (one trace each, in order), summed over
// the batches after the first `warmup_batches`. InputError when warmup_batches < 0, as the simulator's.
LruCacheStats simulate_lru_cache(const std::vector<IndexTrace>& batches, int64_t rows, int64_t cache_slots,
                                 int warmup_batches);

// The check of the cache model on one table (`shard-plan check-cache-model`; docs/cost-models.md).
struct CacheCheckOptions {
  // Batches measured after the warm-up; 0: at least 200, and enough for 20,000 distinct rows.
  int64_t measured_batches = 0;
  // The warm-up of each cache (design 4.6) runs until every slot holds a row and for 3 T_C batches (the
  // model's characteristic time). It ends sooner once a block of 100 batches misses at most 0.1% of its
  // rows: from an empty cache the miss rate only falls, so no further warm-up could move it by more. And
  // it ends when it has visited this many rows (a batch of fewer than 64 rows counting as 64).
  int64_t warmup_row_budget = 50'000'000;
  // Big tables are simulated at 1/k of their rows and lookups, k = max(1, floor(D / this)) (the model is
  // scale-free in C/R, the persisting rows' share of R, n_b/D and D/S).
  int64_t min_scaled_distinct = 2000;
  // And at most this many rows: the simulator keeps 12 bytes per cache slot and the traces some per row, so
  // a table of 1e11 rows whose batches touch few of them would need gigabytes. Past it k grows further
  // (CacheCheckRun::capped), and the simulated batches touch fewer than min_scaled_distinct rows.
  int64_t max_simulated_rows = 1 << 24;
};

enum class WarmupEnd {
  kSteady,     // 3 T_C batches, every slot holding a row
  kFewMisses,  // a block of batches missed at most 0.1% of its rows
  kBudget,     // the row budget ran out first: the simulated rate may still hold cold misses
};
const char* warmup_end_name(WarmupEnd end);  // "steady", "few misses", "budget"

struct CacheCheckLevel {
  double load_factor = 0.0;
  int64_t cache_slots = 0;      // the table's (unscaled) cache
  CacheMissEstimate predicted;  // for the table itself
  int64_t simulated_slots = 0;  // the simulated (scaled) table's cache
  int64_t warmup_batches = 0;
  WarmupEnd warmup_end = WarmupEnd::kSteady;
  LruCacheStats simulated;  // over the measured batches
};

struct CacheCheckRun {
  double persistence = 1.0;
  int64_t scale = 1;    // k: the simulated table has rows / k rows and pooling factor / k
  bool capped = false;  // k raised to keep the simulated table within max_simulated_rows
  int64_t simulated_rows = 0;
  int64_t simulated_distinct = 0;  // D of the simulated batches
  int64_t measured_batches = 0;
  std::vector<CacheCheckLevel> levels;
};

// Predicts and simulates `table`'s cache at each load factor: one cache per level, each fed the same
// TraceSequence(table scaled, batch, seed, persistence) from its first batch.
CacheCheckRun check_cache_model(const Table& table, int64_t batch, const std::vector<double>& load_factors,
                                double persistence, uint64_t seed, const CacheCheckOptions& options = {});

}  // namespace shardplan
