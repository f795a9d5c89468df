#include "shardplan/dataset/reuse_calibration.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/core/strict_fp.hpp"

namespace shardplan {

namespace {

constexpr int kMaxIterations = 20000;
constexpr double kTolerance = 1e-10;
constexpr int kMaxRoundingPasses = 50;

}  // namespace

bool bin_allowed(int bin, int64_t lookups, int64_t rows) {
  if (lookups <= 0) return false;
  const BinRange range = reuse_bin_range(bin);
  if (2 * range.lo > lookups) return false;
  if (bin == kReuseBins - 1) return true;
  return typical_bin_count(bin) * static_cast<double>(rows) >= static_cast<double>(lookups);
}

CalibrationResult calibrate_histograms(const std::vector<HistogramPrior>& priors, const ReuseHist& target) {
  const std::size_t num_tables = priors.size();
  std::array<double, kReuseBins> typical{};
  for (int b = 0; b < kReuseBins; ++b) typical[b] = typical_bin_count(b);

  // prior[t][b]: a Gaussian bump over the bin index, zero where the bin is not allowed.
  std::vector<std::array<double, kReuseBins>> prior(num_tables);
  double total_lookups = 0.0;
  for (std::size_t t = 0; t < num_tables; ++t) {
    const HistogramPrior& p = priors[t];
    total_lookups += static_cast<double>(std::max<int64_t>(p.lookups, 0));
    for (int b = 0; b < kReuseBins; ++b) {
      double z = (b - p.center) / p.spread;
      prior[t][b] = bin_allowed(b, p.lookups, p.rows) ? std::exp(-0.5 * z * z) : 0.0;
    }
  }
  // Bins no table may use (a small pool) drop out of the target, which is renormalised over the rest.
  ReuseHist reachable_target{};
  double target_sum = 0.0;
  for (int b = 0; b < kReuseBins; ++b) {
    bool reachable = false;
    for (std::size_t t = 0; t < num_tables && !reachable; ++t) reachable = prior[t][b] > 0.0;
    reachable_target[b] = reachable ? target[b] : 0.0;
    target_sum += reachable_target[b];
  }
  CalibrationResult result;
  result.rows_per_bin.resize(num_tables);
  for (int b = 0; b < kReuseBins; ++b) {
    if (target[b] > 0.0 && reachable_target[b] == 0.0) result.unreachable_bins.push_back(b);
  }
  if (!(target_sum > 0.0)) return result;  // no lookups anywhere: no histograms
  double target_mean_count = 0.0;
  for (int b = 0; b < kReuseBins; ++b) target_mean_count += reachable_target[b] / target_sum * typical[b];
  const double total_distinct = total_lookups / target_mean_count;
  std::array<double, kReuseBins> column_goal{};
  for (int b = 0; b < kReuseBins; ++b) column_goal[b] = reachable_target[b] / target_sum * total_distinct;

  // n[t][b] = x[t] * y[b] * prior[t][b]; alternate the row (lookups) and column (bin share) fits.
  std::vector<double> x(num_tables, 1.0);
  std::array<double, kReuseBins> y{};
  y.fill(1.0);
  for (result.iterations = 1; result.iterations <= kMaxIterations; ++result.iterations) {
    for (std::size_t t = 0; t < num_tables; ++t) {
      double spent = 0.0;
      for (int b = 0; b < kReuseBins; ++b) spent += y[b] * prior[t][b] * typical[b];
      x[t] = spent > 0.0 ? static_cast<double>(priors[t].lookups) / spent : 0.0;
    }
    double worst = 0.0;
    for (int b = 0; b < kReuseBins; ++b) {
      double held = 0.0;
      for (std::size_t t = 0; t < num_tables; ++t) held += x[t] * prior[t][b];
      if (held <= 0.0) continue;
      double rows_in_bin = held * y[b];
      double miss = column_goal[b] > 0.0 ? std::abs(rows_in_bin - column_goal[b]) / column_goal[b]
                                         : (rows_in_bin > 0.0 ? 1.0 : 0.0);
      worst = std::max(worst, miss);
      y[b] = column_goal[b] / held;
    }
    result.max_column_error = worst;
    if (worst < kTolerance) break;
  }
  result.iterations = std::min(result.iterations, kMaxIterations);

  // Integer distinct rows per bin: D_t rounded, then apportioned over the bins.
  for (std::size_t t = 0; t < num_tables; ++t) {
    ReuseHist share{};
    double distinct = 0.0;
    for (int b = 0; b < kReuseBins; ++b) {
      share[b] = x[t] * y[b] * prior[t][b];
      distinct += share[b];
    }
    if (!(distinct > 0.0)) continue;
    // Rounding drops fractional hot rows, which carry many lookups; re-derive D from the lookups the
    // rounded bins spend until it settles, so that N / D is the rounded histogram's typical mean count
    // (the D a trace of this histogram will pick).
    const int64_t cap = std::max<int64_t>(1, std::min(priors[t].rows, priors[t].lookups));
    int64_t d = std::clamp<int64_t>(std::llround(distinct), 1, cap);
    BinCounts counts = apportion_rows(share, d);
    for (int round = 0; round < kMaxRoundingPasses; ++round) {
      double spent = 0.0;
      for (int b = 0; b < kReuseBins; ++b) spent += static_cast<double>(counts[b]) * typical[b];
      const double mean_count = spent / static_cast<double>(d);
      const int64_t next =
          std::clamp<int64_t>(std::llround(static_cast<double>(priors[t].lookups) / mean_count), 1, cap);
      if (next == d) break;
      d = next;
      counts = apportion_rows(share, d);
    }
    result.rows_per_bin[t] = counts;
  }
  return result;
}

}  // namespace shardplan
