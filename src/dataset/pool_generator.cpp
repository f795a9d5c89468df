#include "shardplan/dataset/pool_generator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/strict_fp.hpp"
#include "shardplan/dataset/reuse_calibration.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {

namespace {

enum Stream : uint64_t { kRowsStream = 11, kPoolingStream = 12, kReuseStream = 13 };

// log10(rows) ~ N(4.8, 1.2) truncated to [2, 7.6]: median ~63K rows, 10% above ~2.3M, a few at ~40M.
constexpr double kLog10RowsMean = 4.8;
constexpr double kLog10RowsStd = 1.2;
// Share of single-valued features: pooling factor <= 1 (a value per sample, or none when missing).
constexpr double kSingleValuedShare = 0.3;
// Multi-valued: pooling factor 1 + s * exp(sigma * z), z correlated with the table's size.
constexpr double kPoolingSigma = 1.4;
constexpr double kSizePoolingCorrelation = 0.3;
// Reuse prior: bump centre (bins) = base + slope * log2(lookups / batch) + noise. The aggregate is hot
// (most distinct rows are read 8+ times), so centring near bin 8 lets the fit keep each table's shape;
// slope 0.5 makes tables read more touch more distinct rows (about sqrt(lookups)), and the modest noise
// keeps few tables under 50 distinct rows per batch (tuned over seeds 1-12, docs/dataset.md).
constexpr double kReuseCenterBase = 8.0;
constexpr double kReuseCenterSlope = 0.5;
constexpr double kReuseCenterNoise = 1.0;

double round_to(double value, double scale) { return std::round(value * scale) / scale; }

struct Draw {
  int64_t rows = 0;
  double size_z = 0.0;  // the standard normal behind rows, before truncation's rejection
};

Draw draw_rows(Rng& rng) {
  for (;;) {
    double z = rng.normal();
    double log10_rows = kLog10RowsMean + kLog10RowsStd * z;
    if (log10_rows < kMinLog10Rows || log10_rows > kMaxLog10Rows) continue;
    return {std::llround(std::pow(10.0, log10_rows)), z};
  }
}

// Pooling factors with the pool mean exactly `mean`: the multi-valued tables' scale s is solved for.
std::vector<double> draw_pooling_factors(const std::vector<Draw>& sizes, double mean, Rng& rng) {
  const std::size_t n = sizes.size();
  std::vector<double> pf(n, 0.0);
  std::vector<double> heavy(n, 0.0);  // exp(sigma z) of multi-valued tables; 0 for single-valued
  for (std::size_t t = 0; t < n; ++t) {
    bool single = rng.uniform() < kSingleValuedShare;
    double u = rng.uniform();
    double z = kSizePoolingCorrelation * sizes[t].size_z +
               std::sqrt(1.0 - kSizePoolingCorrelation * kSizePoolingCorrelation) * rng.normal();
    if (single) {
      pf[t] = 1.0 - 0.6 * u * u;  // mostly present: near 1, down to 0.4
    } else {
      heavy[t] = std::exp(kPoolingSigma * z);
    }
  }
  auto pool_sum = [&](double scale) {
    double sum = 0.0;
    for (std::size_t t = 0; t < n; ++t) {
      sum += heavy[t] > 0.0 ? std::min(kPoolingFactorCap, 1.0 + scale * heavy[t]) : pf[t];
    }
    return sum;
  };
  const double goal = mean * static_cast<double>(n);
  if (pool_sum(0.0) >= goal || pool_sum(1e9) <= goal) {
    throw SettingError("mean pooling factor", fmt::format("{} is out of reach for a pool of {} tables", mean, n));
  }
  double lo = 0.0;
  double hi = 1e9;
  for (int k = 0; k < 200; ++k) {
    double mid = 0.5 * (lo + hi);
    (pool_sum(mid) < goal ? lo : hi) = mid;
  }
  for (std::size_t t = 0; t < n; ++t) {
    if (heavy[t] > 0.0) pf[t] = std::min(kPoolingFactorCap, 1.0 + lo * heavy[t]);
    pf[t] = round_to(pf[t], 1e4);
  }
  return pf;
}

// A histogram in millionths that add up to exactly one million (the largest bin takes the rounding
// slack), so that the tables loader's renormalisation moves no value by more than a few ulps and every
// file built from the pool (the task sets) writes the same six decimals.
ReuseHist to_millionths(const ReuseHist& hist) {
  std::array<int64_t, kReuseBins> units{};
  int64_t sum = 0;
  for (int b = 0; b < kReuseBins; ++b) {
    units[b] = std::llround(hist[b] * 1e6);
    sum += units[b];
  }
  auto largest = std::max_element(units.begin(), units.end());
  *largest += 1'000'000 - sum;
  ReuseHist out{};
  for (int b = 0; b < kReuseBins; ++b) out[b] = static_cast<double>(units[b]) / 1e6;
  return out;
}

// The written histogram that a trace at the reference batch reproduces exactly: rounding can leave the
// hottest rows' minimum counts above the table's lookups, and then the trace must pick other bins;
// adopting the trace's histogram until it stops changing makes file and trace agree.
ReuseHist settle_histogram(const ReuseHist& hist, int64_t lookups, int64_t rows) {
  constexpr int kMaxPasses = 10;
  ReuseHist written = to_millionths(hist);
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    ReuseHist next = to_millionths(plan_bins(written, lookups, rows).histogram());
    if (next == written) break;
    written = next;
  }
  return written;
}

}  // namespace

int realistic_width(int64_t rows, double pooling_factor) {
  double base =
      1.5 * std::pow(static_cast<double>(rows), 0.25) * (1.0 + 0.5 * std::log10(std::max(1.0, pooling_factor)));
  int exponent = std::clamp(static_cast<int>(std::lround(std::log2(base))), 2, 8);
  return 1 << exponent;
}

std::vector<Table> generate_pool(const PoolConfig& config) {
  if (config.num_tables < 1 || config.num_tables > kMaxPoolTables) {
    throw SettingError("pool tables", fmt::format("must be in [1, {}], got {}", kMaxPoolTables, config.num_tables));
  }
  if (config.reference_batch < 1) {
    throw SettingError("reference batch", fmt::format("must be at least 1, got {}", config.reference_batch));
  }
  if (!(config.mean_pooling_factor > 1.0)) {
    throw SettingError("mean pooling factor", fmt::format("must exceed 1, got {}", config.mean_pooling_factor));
  }
  const auto n = static_cast<std::size_t>(config.num_tables);
  Rng rows_rng(derive_seed(config.seed, kRowsStream));
  std::vector<Draw> sizes(n);
  for (auto& size : sizes) size = draw_rows(rows_rng);
  Rng pooling_rng(derive_seed(config.seed, kPoolingStream));
  std::vector<double> pooling = draw_pooling_factors(sizes, config.mean_pooling_factor, pooling_rng);

  std::vector<Table> tables(n);
  std::vector<HistogramPrior> priors(n);
  Rng reuse_rng(derive_seed(config.seed, kReuseStream));
  for (std::size_t t = 0; t < n; ++t) {
    Table& table = tables[t];
    table.name = fmt::format("t{}", t);
    table.rows = sizes[t].rows;
    table.pooling_factor = pooling[t];
    table.dim = realistic_width(table.rows, table.pooling_factor);
    HistogramPrior& prior = priors[t];
    prior.lookups = trace_lookups(table, config.reference_batch);
    prior.rows = table.rows;
    double hotness =
        std::log2(std::max(1.0, static_cast<double>(prior.lookups)) / static_cast<double>(config.reference_batch));
    prior.center = kReuseCenterBase + kReuseCenterSlope * hotness + kReuseCenterNoise * reuse_rng.normal();
    prior.spread = 1.5 + 2.5 * reuse_rng.uniform();
  }

  CalibrationResult calibration = calibrate_histograms(priors, config.target_hist);
  if (!calibration.unreachable_bins.empty()) {
    spdlog::warn(
        "gen-pool: no table of this pool can have rows in reuse bin(s) {}; the pooled histogram leaves "
        "them empty (use more tables)",
        fmt::join(calibration.unreachable_bins, ", "));
  }
  if (calibration.max_column_error > 1e-6) {
    spdlog::warn("gen-pool: reuse calibration stopped {:.2g} (relative) short of the target histogram",
                 calibration.max_column_error);
  }
  for (std::size_t t = 0; t < n; ++t) {
    const BinCounts& counts = calibration.rows_per_bin[t];
    int64_t distinct = 0;
    for (int64_t c : counts) distinct += c;
    if (distinct == 0) continue;  // no lookups: the table keeps no histogram
    ReuseHist hist{};
    for (int b = 0; b < kReuseBins; ++b) hist[b] = static_cast<double>(counts[b]) / static_cast<double>(distinct);
    tables[t].reuse_hist = settle_histogram(hist, priors[t].lookups, tables[t].rows);
  }
  return tables;
}

}  // namespace shardplan
