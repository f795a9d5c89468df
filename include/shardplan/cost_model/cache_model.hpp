#pragma once
// The miss rate of a table kept in host memory (UVM) behind FBGEMM's HBM cache: TorchRec's
// fused_uvm_caching kernel with CacheAlgorithm.LRU, one cache per piece. docs/cost-models.md ("UVM
// caching: the miss rate") derives it and checks it against an LRU simulation of FBGEMM's cache
// (costs/cache_simulation.hpp, `shard-plan check-cache-model`).
//
// FBGEMM's cache (docs/design/uvm-caching.md 3.1, 3.3): S sets of 32 ways, C = 32 S slots; the LRU clock
// ticks once per batch; a batch's unique ids are looked up once each (set = fmix64(id) mod S); a hit
// stamps its way with the batch's time, which locks the way for the batch; misses take the ways of their
// set stamped before the batch, oldest first; a miss that finds none is a conflict miss, read from UVM
// per lookup.
//
// The model (design 4.3-4.4). A step's batch makes N = round(B x pooling factor) lookups into the piece
// and touches D distinct rows, n_b of them in reuse bin b: plan_bins(histogram, N, R), exactly what the
// trace synthesiser draws. Nothing in one batch's histogram says which rows the next batch touches, so
// the model states it (assumption P, popularity persists): a row of bin b >= 1 ("warm", accessed c_b =
// typical_bin_count(b) times, a rate of about c_b per batch) is touched again in the next batch with
//   p_b = sigma (1 - e^(-c_b))            (0.865, 0.969, 0.998 for b = 1..3 at sigma = 1)
// and is otherwise replaced by a fresh row; singletons (bin 0) are fresh every batch. Fresh rows are drawn
// uniformly from the rows the persisting warm rows leave. sigma in [0, 1] scales the persistence: 0 is
// independent uniform batches (the single-batch traces), 1 the default. Per batch:
//   W_p = sum_{b>=1} n_b p_b                warm rows that persist (cached whenever C >= D)
//   a   = D - W_p                           fresh rows, each of the R - W_p others with q = a / (R - W_p)
// Che's approximation (Che, Tung, Wang, IEEE JSAC 2002) for this batch-clocked LRU, with the warm set
// always referenced (Fricker, Robert, Roberts, ITC 2012): the distinct rows referenced in the last T
// batches are O(T) = W_p + (R - W_p)(1 - (1-q)^T), and the cache holds the last T_C batches' rows,
// O(T_C) = C, so a fresh row misses with
//   f = (1-q)^(T_C) = (R - C) / (R - W_p),  T_C = ln f / ln(1 - q)
//   M = a f,   m_u = M / D,   m_l = f sum_b n_b (1 - p_b) c^_b / N
// (c^_b: the bins' typical counts scaled, within their bins, to add up to N). sigma = 0 gives m_u =
// 1 - C/R exactly; sigma = 1 with W_p << R gives (h_0 + sum_{b>=1} h_b e^(-c_b)) (1 - C/R).
// Set conflicts: a set draws X ~ Binomial(D, 1/S) of the batch's unique ids and its hits keep their ways,
// so K = S E[(X - 32)^+] unique ids find no way (K/D: 7.0% at C = D, 0.57% at 1.33 D, 1.5e-5 at 2 D).
// Conflicts are misses too: M is at least K.
// Below C = D the cache holds C/D of the last batch's rows, so persisting warm rows hit with C/D and fresh
// rows miss: M = W_p (1 - C/D) + a, T_C = C/D (a rough bound: outside the validity range).
//
// Validity: C >= 2D (min_load_factor; below it conflicts grow fast), C well above 32 (a few sets make the
// per-set LRU lumpy), and the piece's traffic as assumption P says. The check (docs/cost-models.md) finds
// it within 1 percentage point of the simulation on 20 pool tables at batch 65536, sigma = 1, 0.5 and 0
// (within 3.1 on other seeds, where a huge table's simulated cache had not filled).
#include <cstdint>

#include "shardplan/core/table.hpp"
#include "shardplan/core/uvm_cache.hpp"  // the cache's geometry: uvm_cache_slots, kUvmCacheWays

namespace shardplan {

struct CacheMissEstimate {
  double distinct = 0;             // D: distinct rows a batch touches
  double unique_misses = 0;        // M: unique ids per batch not in the cache (inserted + conflict)
  double conflict_unique = 0;      // K: unique ids per batch that find no free way in their set
  double miss_rate_unique = 0;     // M / D   (FBGEMM num_unique_misses / num_unique_indices)
  double miss_rate_lookup = 0;     // the lookup-weighted miss rate: lookups of rows not cached / N
  double characteristic_time = 0;  // T_C in batches (Che's approximation); +inf when everything fits
};

// Assumption P's persistence of a row in reuse bin `bin`: the chance it is touched again in the next
// batch, persistence * (1 - e^(-typical_bin_count(bin))) for a warm bin, 0 for bin 0 (singletons).
// The multi-batch trace (dataset/trace.hpp) draws with it.
double bin_persistence(int bin, double persistence);

// One cached piece (a Table: rows, pooling factor, reuse histogram), `batch` samples per step,
// `cache_slots` slots, `persistence` sigma in [0,1] (design 4.2-4.4: the share of a batch's reused rows that
// stay popular in the next batch). Zero misses for a piece without lookups.
CacheMissEstimate estimate_lru_misses(const Table& piece, int64_t batch, int64_t cache_slots, double persistence = 1.0);

// The smallest load factor whose cache holds twice the batch's distinct rows (C >= 2D), below which
// set conflicts turn into per-lookup UVM reads; in (0, 1]: 1 when no smaller one qualifies.
double min_load_factor(const Table& piece, int64_t batch);

}  // namespace shardplan
