#include "shardplan/cost_model/rowwise_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"

namespace shardplan {

namespace {

// Partners started their ranks alike: measured start delays this close (the collector's given delays of 0
// measure about 0.0002 ms).
constexpr double kSameDelayMs = 0.05;

bool same_delays(const CommSample& a, const CommSample& b) {
  if (a.delays_ms.size() != b.delays_ms.size()) return false;
  for (std::size_t r = 0; r < a.delays_ms.size(); ++r) {
    if (std::abs(a.delays_ms[r] - b.delays_ms[r]) > kSameDelayMs) return false;
  }
  return true;
}

double mean_step_ms(const CommSample& s) {
  double sum = 0.0;
  for (std::size_t r = 0; r < s.fw_ms.size(); ++r) sum += s.fw_ms[r] + s.bw_ms[r];
  return s.fw_ms.empty() ? 0.0 : sum / static_cast<double>(s.fw_ms.size());
}

// The least-absolute-deviations line with a >= 0 and b >= 0, exactly: timings on a shared host have heavy
// tails, and a few pairs slowed by a stray process must not move every plan's charge. The L1 optimum over
// that region lies on a vertex: a line through two points, through one point flat (b = 0) or through the
// origin (a = 0), or the zero line. Every candidate is tried: O(n^3) for n pairs, 60 here, about a second
// for 1,000. The first of equal error wins, so the fit is deterministic.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  auto error = [&](double a, double b) {
    double e = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) e += std::abs(a + b * x[i] - y[i]);
    return e;
  };
  std::pair<double, double> best{0.0, 0.0};
  double best_error = error(0.0, 0.0);
  auto consider = [&](double a, double b) {
    if (!(a >= 0.0 && b >= 0.0)) return;
    const double e = error(a, b);
    if (e < best_error) {
      best = {a, b};
      best_error = e;
    }
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    consider(y[i], 0.0);
    if (x[i] > 0.0) consider(0.0, y[i] / x[i]);
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      if (x[j] == x[i]) continue;
      const double slope = (y[j] - y[i]) / (x[j] - x[i]);
      consider(y[i] - slope * x[i], slope);
    }
  }
  return best;
}

}  // namespace

std::vector<RowwisePair> rowwise_pairs(const std::vector<CommSample>& samples, std::vector<char>* is_reference) {
  std::vector<char> used(samples.size(), 0);
  auto partners = [&](const CommSample& s, const CommSample& other) {
    if (other.rw_dim != 0 || other.allreduce_floats != 0 || !other.host_rw_dims.empty() ||
        other.world_size != s.world_size || other.devices_per_host != s.devices_per_host ||
        other.dim_sums.size() != s.dim_sums.size() || !same_delays(s, other)) {
      return false;
    }
    for (std::size_t r = 0; r < s.dim_sums.size(); ++r) {
      if (other.dim_sums[r] != s.dim_sums[r] + s.rw_dim) return false;
    }
    return true;
  };
  std::vector<RowwisePair> pairs;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const CommSample& s = samples[i];
    if (s.rw_dim <= 0 || s.allreduce_floats != 0 || !s.host_rw_dims.empty() || s.fw_ms.empty()) continue;
    // The pair's two workloads were given one after the other, in either order.
    for (std::size_t j : {i + 1, i - 1}) {
      if (j >= samples.size() || used[j] || !partners(s, samples[j])) continue;
      used[j] = 1;
      pairs.push_back(RowwisePair{s.world_size, s.rw_dim, mean_step_ms(s) - mean_step_ms(samples[j])});
      break;
    }
  }
  if (is_reference != nullptr) *is_reference = used;
  return pairs;
}

RowwiseFit fit_rowwise(const std::vector<RowwisePair>& pairs) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> by_size;
  for (const auto& p : pairs) {
    if (p.world_size < 2) continue;
    by_size[p.world_size].first.push_back(static_cast<double>(p.rw_dim));
    by_size[p.world_size].second.push_back(p.extra_ms);
  }
  RowwiseFit fit;
  for (const auto& [world_size, xy] : by_size) {
    const auto [intercept, slope] = fit_line(xy.first, xy.second);
    fit.points.push_back(RowwiseFitPoint{world_size, intercept, slope, static_cast<int>(xy.first.size())});
  }
  return fit;
}

double fitted_rowwise_ms(const RowwiseFit& fit, int64_t rw_dim, int num_devices) {
  if (num_devices < 2 || rw_dim <= 0 || fit.points.empty()) return 0.0;
  const double w = static_cast<double>(num_devices);
  const auto& points = fit.points;
  double latency = 0.0;
  double per_column = 0.0;
  if (num_devices <= points.front().world_size || num_devices >= points.back().world_size) {
    // Outside the measured sizes: the nearest one's line, its latency scaled by the ring's W - 1 steps.
    const RowwiseFitPoint& p = num_devices <= points.front().world_size ? points.front() : points.back();
    latency = p.latency_ms * (w - 1.0) / static_cast<double>(p.world_size - 1);
    per_column = p.ms_per_column;
  } else {
    // Between two measured sizes: both figures linear in W.
    std::size_t k = 0;
    while (points[k + 1].world_size < num_devices) ++k;
    const RowwiseFitPoint& lo = points[k];
    const RowwiseFitPoint& hi = points[k + 1];
    const double t = (w - lo.world_size) / static_cast<double>(hi.world_size - lo.world_size);
    latency = lo.latency_ms + t * (hi.latency_ms - lo.latency_ms);
    per_column = lo.ms_per_column + t * (hi.ms_per_column - lo.ms_per_column);
  }
  return latency + per_column * static_cast<double>(rw_dim);
}

nlohmann::json rowwise_fit_to_json(const RowwiseFit& fit) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : fit.points) {
    points.push_back({{"world_size", p.world_size},
                      {"latency_ms", p.latency_ms},
                      {"ms_per_column", p.ms_per_column},
                      {"pairs", p.pairs}});
  }
  return {{"form",
           "what a plan's row-wise reduce-scatter and all-gather add to every GPU's step beyond their width "
           "in the all-to-all: latency_ms + ms_per_column x the summed row-wise width, both linear in W "
           "between measured world sizes; beyond them the nearest size's line, its latency_ms scaled by "
           "(W-1)/(W_fit-1)"},
          {"fits", points}};
}

RowwiseFit rowwise_fit_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path) {
  read_object(doc, source, path);
  const auto& list = read_array(require_member(doc, "fits", source, path), source, path + ".fits");
  RowwiseFit fit;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}.fits[{}]", path, i);
    read_object(list[i], source, at);
    RowwiseFitPoint p;
    p.world_size = static_cast<int>(
        read_int64(require_member(list[i], "world_size", source, at), source, at + ".world_size", 2, 1 << 20));
    p.latency_ms = read_double(require_member(list[i], "latency_ms", source, at), source, at + ".latency_ms", 0.0, 1e9);
    p.ms_per_column =
        read_double(require_member(list[i], "ms_per_column", source, at), source, at + ".ms_per_column", 0.0, 1e9);
    if (const auto* n = find_member(list[i], "pairs")) {
      p.pairs = static_cast<int>(read_int64(*n, source, at + ".pairs", 0, 1 << 30));
    }
    if (!fit.points.empty() && p.world_size <= fit.points.back().world_size) {
      throw_field_error(source, at + ".world_size", "must be above the previous fit's", list[i]["world_size"]);
    }
    fit.points.push_back(p);
  }
  return fit;
}

}  // namespace shardplan
