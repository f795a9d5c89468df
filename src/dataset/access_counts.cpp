#include "shardplan/dataset/access_counts.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/core/strict_fp.hpp"

namespace shardplan {

namespace {

constexpr int kLastBin = kReuseBins - 1;
// The unbounded last bin is drawn as if it ended here (twice its lower edge, like every other bin;
// typical_bin_count assumes the same).
constexpr double kLastBinDrawCeiling = 65536.0;

}  // namespace

std::vector<int64_t> draw_access_counts(const BinPlan& plan, int64_t lookups, Rng& rng) {
  const auto n = static_cast<std::size_t>(plan.distinct);
  std::vector<int64_t> counts(n);
  if (n == 0) return counts;
  // Per row: a log-uniform draw within its bin (the shape), and the bounds its final count must keep.
  std::vector<double> shape(n);
  std::vector<int64_t> lo(n);
  std::vector<int64_t> hi(n);
  std::size_t i = 0;
  for (int b = 0; b < kReuseBins; ++b) {
    BinRange range = reuse_bin_range(b);
    const double draw_lo = static_cast<double>(range.lo);
    const double draw_hi = b >= kLastBin ? kLastBinDrawCeiling : static_cast<double>(range.hi);
    for (int64_t k = 0; k < plan.rows_per_bin[b]; ++k, ++i) {
      shape[i] = range.lo == range.hi ? draw_lo : draw_lo * std::pow(draw_hi / draw_lo, rng.uniform());
      lo[i] = plan.realisable ? range.lo : 1;
      hi[i] = plan.realisable ? std::min(range.hi, lookups) : lookups;
    }
  }
  // total(scale) = sum of clamp(shape * scale, lo, hi) is continuous and non-decreasing; find the scale
  // where it reaches `lookups` by bisection, then round down and hand out the remainder one by one.
  auto total = [&](double scale) {
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      sum += std::clamp(shape[j] * scale, static_cast<double>(lo[j]), static_cast<double>(hi[j]));
    }
    return sum;
  };
  const auto goal = static_cast<double>(lookups);
  const double scale_lo = bracket_scale(total, goal, 1e-15).lo;
  int64_t assigned = 0;
  for (std::size_t j = 0; j < n; ++j) {
    double value = std::clamp(shape[j] * scale_lo, static_cast<double>(lo[j]), static_cast<double>(hi[j]));
    counts[j] = std::clamp(static_cast<int64_t>(std::floor(value)), lo[j], hi[j]);
    assigned += counts[j];
  }
  // The bounds can absorb `lookups` (plan_bins checked), so these passes end; normally one suffices.
  while (assigned < lookups) {
    for (std::size_t j = 0; j < n && assigned < lookups; ++j) {
      if (counts[j] < hi[j]) {
        counts[j] += 1;
        assigned += 1;
      }
    }
  }
  while (assigned > lookups) {
    for (std::size_t j = 0; j < n && assigned > lookups; ++j) {
      if (counts[j] > lo[j]) {
        counts[j] -= 1;
        assigned -= 1;
      }
    }
  }
  return counts;
}

}  // namespace shardplan
