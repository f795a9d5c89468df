#include "shardplan/costs/cache_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// A batch clock that stays inside the stamps' int32.
constexpr int64_t kMaxBatches = std::numeric_limits<int32_t>::max() - 1;

}  // namespace

double LruCacheStats::miss_rate_unique() const { return ratio(unique_misses, unique_indices); }
double LruCacheStats::conflict_rate_unique() const { return ratio(conflict_unique_misses, unique_indices); }
double LruCacheStats::miss_rate_lookup() const { return ratio(missed_lookups, requested_indices); }

LruCacheStats& LruCacheStats::operator+=(const LruCacheStats& other) {
  calls += other.calls;
  requested_indices += other.requested_indices;
  unique_indices += other.unique_indices;
  unique_misses += other.unique_misses;
  conflict_unique_misses += other.conflict_unique_misses;
  conflict_misses += other.conflict_misses;
  missed_lookups += other.missed_lookups;
  return *this;
}

int64_t cache_set_of(int64_t id, int64_t sets) {
  // FBGEMM's cache_slot (split_embeddings_cache/common.cuh): MurmurHash3's fmix64, then h % (uint32_t)C.
  auto h = static_cast<uint64_t>(id);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<int64_t>(h % static_cast<uint32_t>(sets));
}

LruCacheSimulator::LruCacheSimulator(int64_t rows, int64_t cache_slots) : rows_(rows) {
  if (rows < 1) throw InputError(fmt::format("LRU cache simulation: rows must be at least 1, got {}", rows));
  constexpr int64_t kMaxSets = std::numeric_limits<int32_t>::max();
  if (cache_slots < kUvmCacheWays || cache_slots % kUvmCacheWays != 0 || cache_slots / kUvmCacheWays > kMaxSets) {
    throw InputError(fmt::format("LRU cache simulation: cache slots must be a positive multiple of {}, got {}",
                                 kUvmCacheWays, cache_slots));
  }
  sets_ = cache_slots / kUvmCacheWays;
  tags_.assign(static_cast<std::size_t>(cache_slots), -1);
  stamps_.assign(static_cast<std::size_t>(cache_slots), 0);
}

LruCacheStats LruCacheSimulator::access(const BatchRows& batch) {
  if (batch.ids.size() != batch.counts.size()) {
    throw InputError(fmt::format("LRU cache simulation: {} ids but {} counts", batch.ids.size(), batch.counts.size()));
  }
  if (now_ >= kMaxBatches) throw InputError("LRU cache simulation: too many batches for one cache");
  const int32_t now = ++now_;
  LruCacheStats stats;
  stats.calls = 1;
  stats.unique_indices = static_cast<int64_t>(batch.ids.size());
  constexpr auto kWays = static_cast<std::size_t>(kUvmCacheWays);
  misses_.clear();
  // The sets first, fetching their ways ahead of the look-ups (a big cache lives in DRAM).
  sets_of_batch_.resize(batch.ids.size());
  for (std::size_t i = 0; i < batch.ids.size(); ++i) {
    const int64_t id = batch.ids[i];
    if (id < 0 || id >= rows_) {
      throw InputError(fmt::format("LRU cache simulation: row id {} is outside [0, {})", id, rows_));
    }
    const int64_t set = cache_set_of(id, sets_);
    sets_of_batch_[i] = set;
    const std::size_t base = static_cast<std::size_t>(set) * kWays;
    __builtin_prefetch(&tags_[base]);
    __builtin_prefetch(&tags_[base + 8]);
    __builtin_prefetch(&tags_[base + 16]);
    __builtin_prefetch(&tags_[base + 24]);
    __builtin_prefetch(&stamps_[base], 1);
    __builtin_prefetch(&stamps_[base + 16], 1);
  }
  // lru_cache_find_uncached: a hit stamps its way (and so keeps it through this batch's inserts).
  for (std::size_t i = 0; i < batch.ids.size(); ++i) {
    const int64_t id = batch.ids[i];
    stats.requested_indices += batch.counts[i];
    const int64_t set = sets_of_batch_[i];
    const std::size_t base = static_cast<std::size_t>(set) * kWays;
    std::size_t way = 0;
    while (way < kWays && tags_[base + way] != id) ++way;
    if (way < kWays) {
      if (stamps_[base + way] == now) {
        throw InputError(fmt::format("LRU cache simulation: row id {} twice in one batch's distinct ids", id));
      }
      stamps_[base + way] = now;
    } else {
      misses_.push_back(Miss{set, id, batch.counts[i]});
    }
  }
  stats.unique_misses = static_cast<int64_t>(misses_.size());
  // lru_cache_insert_kernel: per set, the misses in ascending id order take the ways stamped before this
  // batch, oldest first (FBGEMM sorts the ways by stamp; picking the oldest way left each time is the same
  // order); the rest are conflict misses.
  std::sort(misses_.begin(), misses_.end(),
            [](const Miss& a, const Miss& b) { return a.set != b.set ? a.set < b.set : a.id < b.id; });
  for (std::size_t i = 1; i < misses_.size(); ++i) {
    if (misses_[i].id == misses_[i - 1].id) {
      throw InputError(fmt::format("LRU cache simulation: row id {} twice in one batch's distinct ids", misses_[i].id));
    }
  }
  for (std::size_t first = 0; first < misses_.size();) {
    std::size_t end = first;
    while (end < misses_.size() && misses_[end].set == misses_[first].set) ++end;
    const std::size_t base = static_cast<std::size_t>(misses_[first].set) * kWays;
    std::size_t next = first;
    for (; next < end; ++next) {
      std::size_t oldest = kWays;
      for (std::size_t way = 0; way < kWays; ++way) {
        if (stamps_[base + way] < now && (oldest == kWays || stamps_[base + way] < stamps_[base + oldest])) {
          oldest = way;
        }
      }
      if (oldest == kWays) break;  // every way is stamped now: hit or filled in this batch
      if (tags_[base + oldest] < 0) valid_ += 1;
      tags_[base + oldest] = misses_[next].id;
      stamps_[base + oldest] = now;
    }
    for (std::size_t i = first; i < end; ++i) {
      stats.missed_lookups += misses_[i].count;
      if (i >= next) {
        stats.conflict_unique_misses += 1;
        stats.conflict_misses += misses_[i].count;
      }
    }
    first = end;
  }
  return stats;
}

BatchRows batch_rows(const IndexTrace& trace) {
  std::vector<int64_t> sorted(trace.indices);
  std::sort(sorted.begin(), sorted.end());
  BatchRows rows;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    rows.ids.push_back(sorted[i]);
    rows.counts.push_back(static_cast<int64_t>(j - i));
    i = j;
  }
  return rows;
}

LruCacheStats simulate_lru_cache(const std::vector<IndexTrace>& batches, int64_t rows, int64_t cache_slots,
                                 int warmup_batches) {
  if (warmup_batches < 0) {
    throw InputError(fmt::format("LRU cache simulation: warm-up batches must be 0 or more, got {}", warmup_batches));
  }
  LruCacheSimulator cache(rows, cache_slots);
  LruCacheStats total;
  for (std::size_t t = 0; t < batches.size(); ++t) {
    LruCacheStats batch = cache.access(batch_rows(batches[t]));
    if (t >= static_cast<std::size_t>(warmup_batches)) total += batch;
  }
  return total;
}

const char* warmup_end_name(WarmupEnd end) {
  switch (end) {
    case WarmupEnd::kSteady:
      return "steady";
    case WarmupEnd::kFewMisses:
      return "few misses";
    case WarmupEnd::kBudget:
      return "budget";
  }
  return "?";
}

CacheCheckRun check_cache_model(const Table& table, int64_t batch, const std::vector<double>& load_factors,
                                double persistence, uint64_t seed, const CacheCheckOptions& options) {
  CacheCheckRun run;
  run.persistence = persistence;
  const int64_t distinct = trace_bin_plan(table, batch).distinct;
  run.scale = std::max<int64_t>(1, distinct / std::max<int64_t>(1, options.min_scaled_distinct));
  const int64_t most_rows = std::max<int64_t>(1, options.max_simulated_rows);
  const int64_t scale_for_memory = table.rows / most_rows + (table.rows % most_rows != 0 ? 1 : 0);
  if (scale_for_memory > run.scale) {
    run.scale = scale_for_memory;
    run.capped = true;
  }
  Table simulated = table;
  if (run.scale > 1) {
    simulated.rows =
        std::max<int64_t>(1, std::llround(static_cast<double>(table.rows) / static_cast<double>(run.scale)));
    simulated.pooling_factor = table.pooling_factor / static_cast<double>(run.scale);
  }
  run.simulated_rows = simulated.rows;
  run.simulated_distinct = trace_bin_plan(simulated, batch).distinct;
  const int64_t rows_per_batch = std::max<int64_t>(1, run.simulated_distinct);
  constexpr int64_t kLeastMeasured = 200;
  constexpr int64_t kMeasuredRows = 20'000;
  run.measured_batches = options.measured_batches > 0
                             ? options.measured_batches
                             : std::max(kLeastMeasured, (kMeasuredRows + rows_per_batch - 1) / rows_per_batch);
  constexpr int64_t kBlock = 100;       // batches per block of the few-misses rule
  constexpr double kFewMisses = 0.001;  // share of a block's rows
  // A batch costs its rows, and at least as much as 64 of them however few it has.
  constexpr int64_t kLeastBatchCost = 64;
  const int64_t budget_batches =
      std::max<int64_t>(1, options.warmup_row_budget / std::max(kLeastBatchCost, rows_per_batch));

  for (double load_factor : load_factors) {
    CacheCheckLevel level;
    level.load_factor = load_factor;
    level.cache_slots = uvm_cache_slots(table.rows, load_factor);
    level.predicted = estimate_lru_misses(table, batch, level.cache_slots, persistence);
    level.simulated_slots = uvm_cache_slots(simulated.rows, load_factor);
    const double wanted =
        std::ceil(3.0 * estimate_lru_misses(simulated, batch, level.simulated_slots, persistence).characteristic_time);

    TraceSequence sequence(simulated, batch, seed, persistence);
    LruCacheSimulator cache(simulated.rows, level.simulated_slots);
    LruCacheStats block;
    level.warmup_end = WarmupEnd::kBudget;
    while (level.warmup_batches < budget_batches) {
      if (static_cast<double>(level.warmup_batches) >= wanted && cache.valid_slots() == cache.slots()) {
        level.warmup_end = WarmupEnd::kSteady;
        break;
      }
      if (block.calls == kBlock) {
        if (static_cast<double>(block.unique_misses) <= kFewMisses * static_cast<double>(block.unique_indices)) {
          level.warmup_end = WarmupEnd::kFewMisses;
          break;
        }
        block = LruCacheStats{};
      }
      block += cache.access(sequence.next_rows());
      level.warmup_batches += 1;
    }
    for (int64_t t = 0; t < run.measured_batches; ++t) level.simulated += cache.access(sequence.next_rows());
    run.levels.push_back(level);
  }
  return run;
}

}  // namespace shardplan
