#include "shardplan/rowwise_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "shardplan/errors.hpp"
#include "shardplan/json_fields.hpp"

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

// min sum w_i (a + b x_i - y_i)^2 over a >= 0, b >= 0 (on an edge, the better of the flat line and the
// line through the origin).
std::pair<double, double> weighted_line(const std::vector<double>& x, const std::vector<double>& y,
                                        const std::vector<double>& w) {
  double s0 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    s0 += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
    sxx += w[i] * x[i] * x[i];
    sxy += w[i] * x[i] * y[i];
  }
  const double det = s0 * sxx - sx * sx;
  if (det > 1e-12 * s0 * sxx) {
    const double a = (sy * sxx - sx * sxy) / det;
    const double b = (s0 * sxy - sx * sy) / det;
    if (a >= 0.0 && b >= 0.0) return {a, b};
  }
  auto error = [&](double a, double b) {
    double e = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) e += w[i] * (a + b * x[i] - y[i]) * (a + b * x[i] - y[i]);
    return e;
  };
  const std::pair<double, double> flat{std::max(0.0, sy / s0), 0.0};
  const std::pair<double, double> through_origin{0.0, sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0};
  return error(flat.first, flat.second) <= error(through_origin.first, through_origin.second) ? flat : through_origin;
}

// The least absolute deviations line (iteratively reweighted least squares): timings on a shared host
// have heavy tails, and a few pairs slowed by a stray process must not move every plan's charge.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  constexpr int kRounds = 50;
  constexpr double kFloorMs = 1e-3;  // bounds the weight of a point the line passes through
  std::vector<double> w(x.size(), 1.0);
  std::pair<double, double> line = weighted_line(x, y, w);
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      w[i] = 1.0 / std::max(std::abs(line.first + line.second * x[i] - y[i]), kFloorMs);
    }
    line = weighted_line(x, y, w);
  }
  return line;
}

}  // namespace

std::vector<RowwisePair> rowwise_pairs(const std::vector<CommSample>& samples, std::vector<char>* is_reference) {
  using Key = std::tuple<int, int, std::vector<int64_t>>;  // world size, ranks per host, widths
  std::map<Key, std::vector<std::size_t>> plain;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (s.rw_dim == 0 && s.allreduce_floats == 0) plain[Key{s.world_size, s.devices_per_host, s.dim_sums}].push_back(i);
  }
  if (is_reference != nullptr) is_reference->assign(samples.size(), 0);
  std::vector<RowwisePair> pairs;
  for (const auto& s : samples) {
    if (s.rw_dim <= 0 || s.allreduce_floats != 0) continue;
    std::vector<int64_t> widths = s.dim_sums;
    for (auto& w : widths) w += s.rw_dim;
    const auto found = plain.find(Key{s.world_size, s.devices_per_host, widths});
    if (found == plain.end()) continue;
    double reference = 0.0;
    int partners = 0;
    for (std::size_t i : found->second) {
      if (!same_delays(s, samples[i])) continue;
      reference += mean_step_ms(samples[i]);
      partners += 1;
      if (is_reference != nullptr) (*is_reference)[i] = 1;
    }
    if (partners == 0) continue;
    reference /= partners;
    pairs.push_back(RowwisePair{s.world_size, s.rw_dim, mean_step_ms(s) - reference});
  }
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
  const RowwiseFitPoint* chosen = &fit.points.front();
  for (const auto& p : fit.points) {
    if (p.world_size <= num_devices) chosen = &p;
  }
  const double steps = static_cast<double>(num_devices - 1) / static_cast<double>(chosen->world_size - 1);
  return chosen->latency_ms * steps + chosen->ms_per_column * static_cast<double>(rw_dim);
}

nlohmann::json rowwise_fit_to_json(const RowwiseFit& fit) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : fit.points) {
    points.push_back({{"world_size", p.world_size},
                      {"latency_ms", p.latency_ms},
                      {"ms_per_column", p.ms_per_column},
                      {"pairs", p.pairs}});
  }
  return {{"form", "what a plan's row-wise reduce-scatter and all-gather add to every GPU's step beyond their width "
                   "in the all-to-all: latency_ms x (W-1)/(W_fit-1) + ms_per_column x the summed row-wise width, "
                   "with the line of the largest measured world size W_fit not above W (the smallest below them "
                   "all)"},
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
    p.world_size = static_cast<int>(read_int64(require_member(list[i], "world_size", source, at), source,
                                               at + ".world_size", 2, 1 << 20));
    p.latency_ms = read_double(require_member(list[i], "latency_ms", source, at), source, at + ".latency_ms", 0.0, 1e9);
    p.ms_per_column = read_double(require_member(list[i], "ms_per_column", source, at), source,
                                  at + ".ms_per_column", 0.0, 1e9);
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
