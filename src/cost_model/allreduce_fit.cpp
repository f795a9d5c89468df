#include "shardplan/cost_model/allreduce_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"

namespace shardplan {

double measured_allreduce_ms(const CommSample& sample) {
  if (sample.allreduce_ms.empty()) return 0.0;
  return std::accumulate(sample.allreduce_ms.begin(), sample.allreduce_ms.end(), 0.0) /
         static_cast<double>(sample.allreduce_ms.size());
}

namespace {

// A slope this small stands for "no growth with bytes" (an effectively unbounded bus rate).
constexpr double kFlatSlope = 1e-15;

// min sum ((a + b x_i) / y_i - 1)^2 over a >= 0, b > 0: weighted least squares with weights 1 / y^2. When
// the free optimum leaves that region (or is not unique: one size), the best on its edges: the line
// through the origin (a = 0) or the flat one (b -> 0), whichever errs less.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;  // sums of w, w x, w x^2, w y, w x y with w = 1 / y^2
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    s0 += w;
    s1 += w * x[i];
    s2 += w * x[i] * x[i];
    t0 += w * y[i];
    t1 += w * x[i] * y[i];
  }
  const double det = s0 * s2 - s1 * s1;
  if (det > 1e-12 * s0 * s2) {
    const double a = (t0 * s2 - s1 * t1) / det;
    const double b = (s0 * t1 - s1 * t0) / det;
    if (a >= 0.0 && b > 0.0) return {a, b};
  }
  auto error = [&](double a, double b) {
    double e = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) e += std::pow((a + b * x[i]) / y[i] - 1.0, 2);
    return e;
  };
  const std::pair<double, double> through_origin{0.0, s2 > 0 ? t1 / s2 : 0.0};
  const std::pair<double, double> flat{s0 > 0 ? t0 / s0 : 0.0, kFlatSlope};
  if (!(through_origin.second > 0.0)) return flat;
  return error(flat.first, flat.second) < error(through_origin.first, through_origin.second) ? flat : through_origin;
}

}  // namespace

AllreduceFit fit_allreduce(const std::vector<CommSample>& samples) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> by_size;
  for (const auto& s : samples) {
    const double measured = measured_allreduce_ms(s);
    if (s.allreduce_floats <= 0 || !(measured > 0.0)) continue;
    auto& [x, y] = by_size[s.world_size];
    x.push_back(4.0 * static_cast<double>(s.allreduce_floats));
    y.push_back(measured);
  }
  AllreduceFit fit;
  for (const auto& [world_size, xy] : by_size) {
    const auto [intercept, slope] = fit_line(xy.first, xy.second);
    const double w = static_cast<double>(world_size);
    AllreduceFitPoint p;
    p.world_size = world_size;
    p.step_latency_ms = intercept / (2.0 * (w - 1.0));
    p.bus_bytes_per_ms = 2.0 * (w - 1.0) / (w * slope);
    p.samples = static_cast<int>(xy.first.size());
    fit.points.push_back(p);
  }
  return fit;
}

double fitted_allreduce_ms(const AllreduceFit& fit, const CommFabric& fabric, double bytes, int num_devices) {
  if (fit.points.empty()) return ring_allreduce_ms(fabric, bytes, num_devices);
  const AllreduceFitPoint* chosen = &fit.points.front();
  for (const auto& p : fit.points) {
    if (p.world_size <= num_devices) chosen = &p;
  }
  // The measured figures stand for the host's links and its shared fabric alike.
  CommFabric measured = fabric;
  measured.intra_bytes_per_ms = chosen->bus_bytes_per_ms;
  measured.intra_peer_latency_ms = chosen->step_latency_ms;
  measured.host_bytes_per_ms = 0.0;
  return ring_allreduce_ms(measured, bytes, num_devices);
}

nlohmann::json allreduce_fit_to_json(const AllreduceFit& fit) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : fit.points) {
    points.push_back({{"world_size", p.world_size},
                      {"step_latency_us", p.step_latency_ms * 1e3},
                      {"bus_bandwidth_GBps", p.bus_bytes_per_ms / 1e6},
                      {"samples", p.samples}});
  }
  return {{"form",
           "ring all-reduce, 2(W-1) x step latency + 2(W-1)/W x bytes / bus bandwidth, with the figures "
           "measured at the largest measured world size not above W (the smallest below them all); past "
           "one host, comm.fabric's network bounds them"},
          {"fits", points}};
}

AllreduceFit allreduce_fit_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path) {
  read_object(doc, source, path);
  const auto& list = read_array(require_member(doc, "fits", source, path), source, path + ".fits");
  AllreduceFit fit;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}.fits[{}]", path, i);
    read_object(list[i], source, at);
    AllreduceFitPoint p;
    p.world_size = static_cast<int>(
        read_int64(require_member(list[i], "world_size", source, at), source, at + ".world_size", 2, 1 << 20));
    p.step_latency_ms =
        read_double(require_member(list[i], "step_latency_us", source, at), source, at + ".step_latency_us", 0.0, 1e9) /
        1e3;
    p.bus_bytes_per_ms = read_double(require_member(list[i], "bus_bandwidth_GBps", source, at), source,
                                     at + ".bus_bandwidth_GBps", 1e-9, 1e9) *
                         1e6;
    if (const auto* n = find_member(list[i], "samples")) {
      p.samples = static_cast<int>(read_int64(*n, source, at + ".samples", 0, 1 << 30));
    }
    if (!fit.points.empty() && p.world_size <= fit.points.back().world_size) {
      throw_field_error(source, at + ".world_size", "must be above the previous fit's", list[i]["world_size"]);
    }
    fit.points.push_back(p);
  }
  return fit;
}

}  // namespace shardplan
