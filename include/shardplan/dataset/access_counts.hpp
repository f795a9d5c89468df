#pragma once
// How often each distinct row is accessed in a synthetic batch. A reuse histogram says which fraction
// of the distinct rows falls in each count bin; together with the number of lookups N it fixes the
// number of distinct rows D (the counts must add up to N). This module picks D and the per-bin row
// numbers (deterministically), then draws the counts themselves (seeded).
#include <array>
#include <cstdint>
#include <vector>

#include "shardplan/core/random.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

// Access counts a row in `bin` may have: [lo, hi]; the last bin is unbounded (hi = INT64_MAX).
struct BinRange {
  int64_t lo = 1;
  int64_t hi = 1;
};
BinRange reuse_bin_range(int bin);

// Mean count of a row drawn in `bin` (log-uniform within the bin; the unbounded last bin is drawn as
// if it ended at 65536). N / sum_b(h_b * typical_bin_count(b)) is the natural D for histogram h.
double typical_bin_count(int bin);

using BinCounts = std::array<int64_t, kReuseBins>;

// Splits `distinct` rows over the bins in proportion to `hist` (largest remainder: the counts sum to
// `distinct` and each is within 1 of hist[b] * distinct). `hist` need not be normalised.
BinCounts apportion_rows(const ReuseHist& hist, int64_t distinct);

struct BinPlan {
  int64_t distinct = 0;  // D: distinct rows the batch touches
  BinCounts rows_per_bin{};
  // False when no D (up to the table's rows) lets `lookups` accesses realise the histogram, e.g. a
  // histogram with very hot rows and a small batch. The counts then still add up to `lookups` but may
  // leave their bins.
  bool realisable = true;

  // The reuse histogram a trace following this plan has (rows_per_bin / distinct).
  ReuseHist histogram() const;
};

// Chooses D in a window around N / typical mean count, preferring the D whose apportionment is closest
// to `hist` (a histogram written as k_b / D is reproduced exactly), and only D for which the bins' count
// ranges can add up to `lookups`. D <= min(rows, lookups). No randomness.
BinPlan plan_bins(const ReuseHist& hist, int64_t lookups, int64_t rows);

// One access count per distinct row, grouped by bin in bin order, summing to `lookups`: each count is
// drawn log-uniformly within its bin, then all are scaled by a common factor (clamped to their bins)
// so that the total is exact.
std::vector<int64_t> draw_access_counts(const BinPlan& plan, int64_t lookups, Rng& rng);

}  // namespace shardplan
