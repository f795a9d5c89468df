#include <algorithm>
#include <cmath>
#include <numeric>

#include "shardplan/core/median.hpp"
#include "shardplan/cost_model/metrics.hpp"

namespace shardplan {

namespace {

// Ranks 1..n with ties given their average rank.
std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  // NaN ranks last and ties with NaN: `<` alone is no ordering with NaN, and a tie test by `==` never
  // ended on one (a timing that is not a number hung the comm calibration's error).
  auto less = [&](std::size_t a, std::size_t b) {
    return std::isnan(values[b]) ? !std::isnan(values[a]) : values[a] < values[b];
  };
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;
    while (j < order.size() && !less(order[i], order[j])) ++j;
    double rank = 0.5 * static_cast<double>(i + j - 1) + 1.0;
    for (std::size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

}  // namespace

double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0.0;
  std::vector<double> ra = average_ranks(a);
  std::vector<double> rb = average_ranks(b);
  double n = static_cast<double>(a.size());
  double mean = (n + 1.0) / 2.0;
  double cov = 0.0;
  double va = 0.0;
  double vb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0.0;
}

Metrics compute_metrics(const std::vector<double>& predicted, const std::vector<double>& measured) {
  Metrics m;
  m.count = static_cast<int64_t>(measured.size());
  if (measured.empty()) return m;
  double se = 0.0;
  double ape = 0.0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    double error = predicted[i] - measured[i];
    se += error * error;
    // Floor the denominator at 1 us so near-zero measurements (an idle collective) do not dominate.
    ape += std::abs(error) / std::max(std::abs(measured[i]), 1e-3);
  }
  m.mse = se / static_cast<double>(measured.size());
  m.mape = 100.0 * ape / static_cast<double>(measured.size());
  m.spearman = spearman_correlation(predicted, measured);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < measured.size(); ++i)
    ratios.push_back(predicted[i] / std::max(std::abs(measured[i]), 1e-3));
  m.median_ratio = median(ratios);
  return m;
}

std::optional<ImbalanceResponse> imbalance_response(const std::vector<std::vector<int64_t>>& dim_sums,
                                                    const std::vector<double>& slowest_ms) {
  // Normal equations of the three-parameter fit, solved by Cramer's rule.
  double a[3][3] = {};
  double rhs[3] = {};
  int64_t count = 0;
  for (std::size_t i = 0; i < dim_sums.size() && i < slowest_ms.size(); ++i) {
    const auto& widths = dim_sums[i];
    if (widths.empty() || !(slowest_ms[i] > 0)) continue;
    const double total = static_cast<double>(std::accumulate(widths.begin(), widths.end(), int64_t{0}));
    if (total <= 0) continue;
    const double widest = static_cast<double>(*std::max_element(widths.begin(), widths.end()));
    const double x[3] = {1.0, std::log(total), std::log(widest * static_cast<double>(widths.size()) / total)};
    const double y = std::log(slowest_ms[i]);
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) a[r][c] += x[r] * x[c];
      rhs[r] += x[r] * y;
    }
    ++count;
  }
  auto det = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double d = det(a);
  if (count < 3 || !(std::abs(d) > 1e-10 * std::abs(a[0][0] * a[1][1] * a[2][2]))) return std::nullopt;
  auto solve_for = [&](int column) {
    double m[3][3];
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m[r][c] = c == column ? rhs[r] : a[r][c];
    }
    return det(m) / d;
  };
  return ImbalanceResponse{solve_for(1), solve_for(2), count};
}

nlohmann::json Metrics::to_json() const {
  auto round = [](double v, double scale) { return std::round(v * scale) / scale; };
  return {{"mse", round(mse, 1e6)},
          {"mape_percent", round(mape, 1e3)},
          {"spearman", round(spearman, 1e4)},
          {"median_ratio", round(median_ratio, 1e4)},
          {"count", count}};
}

}  // namespace shardplan
