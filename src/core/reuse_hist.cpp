#include "shardplan/core/reuse_hist.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "shardplan/core/strict_fp.hpp"

namespace shardplan {

int reuse_bin(int64_t count) {
  if (count <= 1) return 0;
  // count in (2^(b-1), 2^b] falls in bin b; ceil(log2(count)) without floating point.
  int bin = 64 - __builtin_clzll(static_cast<unsigned long long>(count - 1));
  return std::min(bin, kReuseBins - 1);
}

void ReuseHistBuilder::add_row(int64_t access_count) {
  if (access_count <= 0) return;
  counts_[static_cast<std::size_t>(reuse_bin(access_count))] += 1;
  distinct_ += 1;
}

ReuseHist ReuseHistBuilder::finish() const {
  ReuseHist hist{};
  if (distinct_ == 0) return hist;
  for (int b = 0; b < kReuseBins; ++b) {
    hist[static_cast<std::size_t>(b)] =
        static_cast<double>(counts_[static_cast<std::size_t>(b)]) / static_cast<double>(distinct_);
  }
  return hist;
}

ReuseHist reuse_histogram(const std::vector<int64_t>& indices) {
  std::vector<int64_t> sorted(indices);
  std::sort(sorted.begin(), sorted.end());
  ReuseHistBuilder builder;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    builder.add_row(static_cast<int64_t>(j - i));
    i = j;
  }
  return builder.finish();
}

double reuse_hist_l1(const ReuseHist& a, const ReuseHist& b) {
  double sum = 0.0;
  for (int i = 0; i < kReuseBins; ++i) sum += std::abs(a[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(i)]);
  return sum;
}

namespace {

constexpr int kLastBin = kReuseBins - 1;
// D is searched within [target / kWindow, target * kWindow]; wide enough to find an exact apportionment
// near the natural D, narrow enough that the counts stay near the middle of their bins.
constexpr double kWindow = 1.5;
constexpr int64_t kMaxSearchSteps = 8192;
// Score = L1 error of the apportionment + kDistancePenalty * |ln(D / target)|: among equally exact D,
// the one closest to the natural D wins.
constexpr double kDistancePenalty = 0.01;
// The unbounded last bin is drawn as if it ended here (twice its lower edge, like every other bin).
constexpr double kLastBinDrawCeiling = 65536.0;

ReuseHist normalised_or_default(const ReuseHist& hist) {
  double sum = 0.0;
  for (double h : hist) sum += h;
  if (!(sum > 0.0) || !std::isfinite(sum)) return kDlrmAggregateReuseHist;
  ReuseHist out{};
  for (int b = 0; b < kReuseBins; ++b) out[b] = hist[b] / sum;
  return out;
}

// Whether counts confined to their bins can add up to `lookups`.
bool bins_can_sum_to(const BinCounts& rows_per_bin, int64_t lookups) {
  int64_t least = 0;
  long double most = 0;
  for (int b = 0; b < kReuseBins; ++b) {
    if (rows_per_bin[b] == 0) continue;
    BinRange range = reuse_bin_range(b);
    least += rows_per_bin[b] * range.lo;
    most += static_cast<long double>(rows_per_bin[b]) * static_cast<long double>(range.hi);
  }
  return least <= lookups && most >= static_cast<long double>(lookups);
}

double apportion_error(const BinCounts& rows_per_bin, int64_t distinct, const ReuseHist& hist) {
  double error = 0.0;
  for (int b = 0; b < kReuseBins; ++b) {
    error += std::abs(static_cast<double>(rows_per_bin[b]) / static_cast<double>(distinct) - hist[b]);
  }
  return error;
}

}  // namespace

BinRange reuse_bin_range(int bin) {
  if (bin <= 0) return {1, 1};
  if (bin >= kLastBin) return {(int64_t{1} << (kLastBin - 1)) + 1, std::numeric_limits<int64_t>::max()};
  return {(int64_t{1} << (bin - 1)) + 1, int64_t{1} << bin};
}

double typical_bin_count(int bin) {
  BinRange range = reuse_bin_range(bin);
  if (range.lo == range.hi) return static_cast<double>(range.lo);
  const double lo = static_cast<double>(range.lo);
  const double hi = bin >= kLastBin ? kLastBinDrawCeiling : static_cast<double>(range.hi);
  return (hi - lo) / std::log(hi / lo);  // mean of the log-uniform law on [lo, hi]
}

BinCounts apportion_rows(const ReuseHist& hist, int64_t distinct) {
  BinCounts counts{};
  double sum = 0.0;
  for (double h : hist) sum += h;
  if (distinct <= 0 || !(sum > 0.0)) return counts;
  std::array<double, kReuseBins> remainder{};
  int64_t assigned = 0;
  for (int b = 0; b < kReuseBins; ++b) {
    double share = hist[b] / sum * static_cast<double>(distinct);
    counts[b] = static_cast<int64_t>(std::floor(share));
    remainder[b] = share - static_cast<double>(counts[b]);
    assigned += counts[b];
  }
  std::array<int, kReuseBins> order{};
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return remainder[a] > remainder[b]; });
  // The shares sum to `distinct` up to rounding, so fewer than kReuseBins rows are left over.
  for (int i = 0; assigned < distinct; i = (i + 1) % kReuseBins) {
    if (hist[order[i]] > 0.0) {
      counts[order[i]] += 1;
      assigned += 1;
    }
  }
  return counts;
}

ReuseHist BinPlan::histogram() const {
  ReuseHist hist{};
  if (distinct <= 0) return hist;
  for (int b = 0; b < kReuseBins; ++b) hist[b] = static_cast<double>(rows_per_bin[b]) / static_cast<double>(distinct);
  return hist;
}

BinPlan plan_bins(const ReuseHist& hist_in, int64_t lookups, int64_t rows) {
  BinPlan plan;
  if (lookups <= 0 || rows <= 0) {
    plan.realisable = lookups <= 0;
    return plan;
  }
  const ReuseHist hist = normalised_or_default(hist_in);
  double mean_count = 0.0;
  for (int b = 0; b < kReuseBins; ++b) mean_count += hist[b] * typical_bin_count(b);
  const double target = static_cast<double>(lookups) / mean_count;
  const int64_t max_distinct = std::min(rows, lookups);
  auto clamp_d = [&](double d) {
    return std::clamp(static_cast<int64_t>(std::llround(std::min(d, 9.0e18))), int64_t{1}, max_distinct);
  };
  const int64_t low = clamp_d(std::floor(target / kWindow));
  const int64_t high = clamp_d(std::ceil(target * kWindow));
  const int64_t center = std::clamp(clamp_d(target), low, high);

  double best_score = std::numeric_limits<double>::infinity();
  // Walk outwards from the natural D; stop once even a perfect apportionment could not beat the best
  // score because of its distance.
  for (int64_t step = 0; step <= kMaxSearchSteps; ++step) {
    bool any_could_win = false;
    const int64_t candidates[2] = {center - step, center + step};
    for (int side = 0; side < (step == 0 ? 1 : 2); ++side) {
      const int64_t d = candidates[side];
      if (d < low || d > high) continue;
      double penalty = kDistancePenalty * std::abs(std::log(static_cast<double>(d) / target));
      if (penalty >= best_score) continue;
      any_could_win = true;
      BinCounts counts = apportion_rows(hist, d);
      if (!bins_can_sum_to(counts, lookups)) continue;
      double score = apportion_error(counts, d, hist) + penalty;
      if (score < best_score) {
        best_score = score;
        plan.distinct = d;
        plan.rows_per_bin = counts;
      }
    }
    if (!any_could_win && step > 0) break;
    if (center - step <= low && center + step >= high) break;
  }
  if (plan.distinct == 0) {
    // No D realises the histogram with this many lookups and rows: keep the natural D (within the
    // rows) and let the counts leave their bins.
    plan.distinct = center;
    plan.rows_per_bin = apportion_rows(hist, center);
    plan.realisable = false;
  }
  return plan;
}

}  // namespace shardplan
