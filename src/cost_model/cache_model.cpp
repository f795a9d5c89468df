#include "shardplan/cost_model/cache_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "shardplan/core/reuse_hist.hpp"

namespace shardplan {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

int64_t batch_lookups(const Table& piece, int64_t batch) {
  if (batch <= 0 || !(piece.pooling_factor > 0.0)) return 0;
  return std::llround(static_cast<double>(batch) * piece.pooling_factor);
}

// Each bin's count per row, scaled like draw_access_counts scales the drawn counts: typical counts times
// a common factor, clamped to their bins, adding up to `lookups` over the plan's rows.
std::array<double, kReuseBins> scaled_bin_counts(const BinPlan& plan, int64_t lookups) {
  std::array<double, kReuseBins> lo{};
  std::array<double, kReuseBins> hi{};
  std::array<double, kReuseBins> typical{};
  const auto n = static_cast<double>(lookups);
  for (int b = 0; b < kReuseBins; ++b) {
    const BinRange range = reuse_bin_range(b);
    typical[b] = typical_bin_count(b);
    lo[b] = plan.realisable ? static_cast<double>(range.lo) : 1.0;
    hi[b] = plan.realisable ? std::min(static_cast<double>(range.hi), n) : n;
  }
  auto total = [&](double scale) {
    double sum = 0.0;
    for (int b = 0; b < kReuseBins; ++b) {
      sum += static_cast<double>(plan.rows_per_bin[b]) * std::clamp(typical[b] * scale, lo[b], hi[b]);
    }
    return sum;
  };
  const double scale_hi = bracket_scale(total, n, 1e-12).hi;
  std::array<double, kReuseBins> counts{};
  for (int b = 0; b < kReuseBins; ++b) counts[b] = std::clamp(typical[b] * scale_hi, lo[b], hi[b]);
  return counts;
}

// Expected unique ids that find no way: sum over the sets of (X - 32)^+, X ~ Binomial(distinct, 1/sets)
// the batch's unique ids in a set (fmix64 spreads ids uniformly).
double expected_conflicts(int64_t distinct, int64_t sets) {
  const auto ways = static_cast<double>(kUvmCacheWays);
  const auto d = static_cast<double>(distinct);
  if (sets <= 0) return d;
  if (distinct <= kUvmCacheWays) return 0.0;
  if (sets == 1) return d - ways;
  const double p = 1.0 / static_cast<double>(sets);
  const double mean = d * p;
  const double log_p = std::log(p);
  const double log_q = std::log1p(-p);
  const double log_d_factorial = std::lgamma(d + 1.0);
  auto pmf = [&](double k) {
    return std::exp(log_d_factorial - std::lgamma(k + 1.0) - std::lgamma(d - k + 1.0) + k * log_p + (d - k) * log_q);
  };
  double per_set = 0.0;
  if (mean <= ways) {
    // The tail above 32 directly: its terms fall from k = 33 on, since the mode is at most 32.
    double term = pmf(ways + 1.0);
    for (double k = ways + 1.0; k <= d && term > 0.0; k += 1.0) {
      per_set += (k - ways) * term;
      if ((k - ways) * term < per_set * 1e-17) break;
      term *= (d - k) / (k + 1.0) * p / (1.0 - p);
    }
  } else {
    // E[(X - 32)^+] = E[X] - 32 + E[(32 - X)^+]: the lower side has 33 terms.
    double lower = 0.0;
    for (double k = 0.0; k < ways; k += 1.0) lower += (ways - k) * pmf(k);
    per_set = mean - ways + lower;
  }
  return std::max(0.0, per_set) * static_cast<double>(sets);
}

}  // namespace

double bin_persistence(int bin, double persistence) {
  if (bin <= 0) return 0.0;
  const double sigma = persistence > 0.0 ? std::min(persistence, 1.0) : 0.0;
  return sigma * -std::expm1(-typical_bin_count(bin));
}

CacheMissEstimate estimate_lru_misses(const Table& piece, int64_t batch, int64_t cache_slots, double persistence) {
  CacheMissEstimate estimate;
  estimate.characteristic_time = kInfinity;
  const int64_t lookups = batch_lookups(piece, batch);
  if (lookups <= 0 || piece.rows <= 0) return estimate;
  const BinPlan plan = plan_bins(piece.reuse_hist_or_default(), lookups, piece.rows);
  if (plan.distinct <= 0) return estimate;
  const std::array<double, kReuseBins> counts = scaled_bin_counts(plan, lookups);

  const auto d = static_cast<double>(plan.distinct);
  const auto r = static_cast<double>(piece.rows);
  const int64_t sets = std::max<int64_t>(cache_slots, 0) / kUvmCacheWays;
  const auto c = static_cast<double>(sets * kUvmCacheWays);
  double persisting = 0.0;          // W_p
  double persisting_lookups = 0.0;  // their lookups
  double fresh_lookups = 0.0;       // the fresh rows' lookups
  for (int b = 0; b < kReuseBins; ++b) {
    const double p = bin_persistence(b, persistence);
    const auto rows = static_cast<double>(plan.rows_per_bin[b]);
    persisting += rows * p;
    persisting_lookups += rows * p * counts[b];
    fresh_lookups += rows * (1.0 - p) * counts[b];
  }
  const double fresh = std::max(0.0, d - persisting);  // a

  double held = 1.0;        // share of the persisting warm rows still cached
  double fresh_miss = 0.0;  // f: chance a fresh row is not cached
  if (c >= r) {
    // Everything fits: no misses once the cache has warmed up (but for set conflicts).
  } else if (c >= d) {
    fresh_miss = (r - c) / (r - persisting);
    const double q = fresh / (r - persisting);
    if (q > 0.0) estimate.characteristic_time = q < 1.0 ? std::log(fresh_miss) / std::log1p(-q) : 1.0;
  } else {
    held = c / d;
    fresh_miss = 1.0;
    estimate.characteristic_time = c / d;
  }
  double misses = persisting * (1.0 - held) + fresh * fresh_miss;
  double missed_lookups = persisting_lookups * (1.0 - held) + fresh_lookups * fresh_miss;
  const double conflicts = expected_conflicts(plan.distinct, sets);
  if (conflicts > misses) {
    // Conflicts are misses; where they outnumber the rest, count the extra ones at the mean lookups per row.
    missed_lookups += (conflicts - misses) * static_cast<double>(lookups) / d;
    misses = conflicts;
  }
  estimate.distinct = d;
  estimate.unique_misses = misses;
  estimate.conflict_unique = conflicts;
  estimate.miss_rate_unique = std::min(1.0, misses / d);
  estimate.miss_rate_lookup = std::min(1.0, missed_lookups / static_cast<double>(lookups));
  return estimate;
}

double min_load_factor(const Table& piece, int64_t batch) {
  if (piece.rows <= 0) return 1.0;
  const int64_t lookups = batch_lookups(piece, batch);
  const int64_t distinct = lookups > 0 ? plan_bins(piece.reuse_hist_or_default(), lookups, piece.rows).distinct : 0;
  // The fewest sets with 32 S >= 2D, and the fewest rows floor(R clf) that give FBGEMM that many.
  const int64_t sets = std::max<int64_t>(1, (2 * distinct + kUvmCacheWays - 1) / kUvmCacheWays);
  const auto rows = static_cast<double>(piece.rows);
  double load_factor = sets <= 1 ? 1.0 / rows : static_cast<double>(kUvmCacheWays * (sets - 1) + 1) / rows;
  // R * clf may round below the integer it should reach; step up to the first value that gets there.
  for (int k = 0; k < 64 && load_factor < 1.0 && uvm_cache_slots(piece.rows, load_factor) < 2 * distinct; ++k) {
    load_factor = std::nextafter(load_factor, 2.0);
  }
  return std::min(load_factor, 1.0);
}

}  // namespace shardplan
