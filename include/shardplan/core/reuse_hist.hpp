#pragma once
// The 17-bin reuse histogram of method.md, defined once for the importer, the trace synthesiser and
// the cost model: over the distinct row ids a batch touches, the fraction whose access count falls in
// (0,1], (1,2], (2,4], ..., (16384,32768], (32768,inf). Also how a histogram and a batch's lookups fix
// the batch's distinct rows per bin (plan_bins), which the trace synthesiser follows and the cache model
// (cost_model/cache_model.hpp) predicts from.
#include <array>
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// [lo, hi] around the scale where a continuous, non-decreasing total(scale) reaches `goal`: doubling from 1,
// then bisection until hi - lo <= hi x relative_tolerance. Spreading a batch's lookups over the bins'
// counts (draw_access_counts, the miss model's expected counts) solves it.
struct ScaleBracket {
  double lo = 0.0;
  double hi = 1.0;
};
template <typename Total>
ScaleBracket bracket_scale(const Total& total, double goal, double relative_tolerance) {
  ScaleBracket s;
  for (int k = 0; k < 2100 && total(s.hi) < goal; ++k) {
    s.lo = s.hi;
    s.hi *= 2.0;
  }
  for (int k = 0; k < 200 && s.hi - s.lo > s.hi * relative_tolerance; ++k) {
    const double mid = 0.5 * (s.lo + s.hi);
    (total(mid) < goal ? s.lo : s.hi) = mid;
  }
  return s;
}

// Bin of a row accessed `count` >= 1 times: 0 for 1, 1 for 2, 2 for 3..4, ..., 16 for more than 32768.
int reuse_bin(int64_t count);

// Accumulates access counts per bin; `finish` normalises (all zeros when nothing was added).
class ReuseHistBuilder {
 public:
  void add_row(int64_t access_count);  // one distinct row, accessed access_count >= 1 times
  ReuseHist finish() const;
  int64_t distinct_rows() const { return distinct_; }

 private:
  std::array<int64_t, kReuseBins> counts_{};
  int64_t distinct_ = 0;
};

// Histogram of one table's lookups (row ids, any order).
ReuseHist reuse_histogram(const std::vector<int64_t>& indices);

// L1 distance between two histograms.
double reuse_hist_l1(const ReuseHist& a, const ReuseHist& b);

// How often each distinct row is accessed in a synthetic batch: a reuse histogram says which fraction
// of the distinct rows falls in each count bin; together with the number of lookups N it fixes the
// number of distinct rows D (the counts must add up to N). plan_bins picks D and the per-bin row numbers
// (deterministically); dataset/access_counts.hpp draws the counts themselves (seeded).

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

}  // namespace shardplan
