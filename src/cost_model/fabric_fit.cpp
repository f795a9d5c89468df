#include "shardplan/cost_model/fabric_fit.hpp"

#include <cmath>
#include <limits>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

// One device of one sample: its traffic and its measured backward time.
struct Row {
  AllToAllVolume volume;
  double measured_ms = 0.0;
};

// The candidates are fabrics themselves, scored by the structure's own formula.
double loss(const CommFabric& f, const std::vector<Row>& rows) {
  double sum = 0.0;
  for (const Row& r : rows) {
    sum += std::fabs(std::log(std::max(structural_transfer_ms(f, r.volume), 1e-6) / r.measured_ms));
  }
  return sum / static_cast<double>(rows.size());
}

std::vector<double> log_grid(double lo, double hi, int points) {
  std::vector<double> values;
  for (int i = 0; i < points; ++i) values.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / (points - 1)));
  return values;
}

}  // namespace

CommFabric fabric_for_sample(const CommFabric& fabric, const CommSample& sample) {
  CommFabric f = fabric;
  f.devices_per_host = sample.devices_per_host > 0 ? sample.devices_per_host : sample.world_size;
  return f;
}

FabricFit fit_fabric(const std::vector<CommSample>& samples, CommFabric start) {
  if (samples.empty()) throw InputError("no comm samples to fit the all-to-all structure to");
  std::vector<Row> rows;
  bool spans_hosts = false;
  for (const CommSample& s : samples) {
    std::vector<AllToAllVolume> volumes = alltoall_volumes(fabric_for_sample(start, s), model_dim_sums(s));
    for (std::size_t r = 0; r < volumes.size(); ++r) {
      if (!(s.bw_ms[r] > 0)) continue;
      spans_hosts = spans_hosts || volumes[r].inter_peers > 0;
      rows.push_back({volumes[r], s.bw_ms[r]});
    }
  }
  if (rows.empty())
    throw InputError("no comm samples with a positive backward time to fit the all-to-all structure to");
  // Every k-th row for the grid (enough to place it), all rows for the final search.
  std::vector<Row> coarse;
  const std::size_t stride = std::max<std::size_t>(1, rows.size() / 3000);
  for (std::size_t i = 0; i < rows.size(); i += stride) coarse.push_back(rows[i]);

  // Rates in bytes per ms from 10^2 (100 KB/s) to 10^8 (100 GB/s); latencies per peer from 1 us to 10 ms.
  const std::vector<double> rates = log_grid(1e2, 1e8, 19);
  const std::vector<double> latencies = log_grid(1e-3, 10.0, 13);
  std::vector<double> host_rates = {0.0};
  for (double r : rates) host_rates.push_back(r);
  // The rates and latencies only; name, batch and layout do not enter the per-row formula.
  auto with = [](double rate, double latency, double host, bool host_adds) {
    CommFabric f;
    f.intra_bytes_per_ms = f.inter_bytes_per_ms = rate;
    f.intra_peer_latency_ms = f.inter_peer_latency_ms = latency;
    f.host_bytes_per_ms = host;
    f.host_adds = host_adds;
    return f;
  };
  // Each way a shared host fabric can meet the GPUs' own links is placed on the grid and refined on its
  // own, then the data decides between them: the two forms' best points lie far apart, and a grid point
  // of the wrong form can look better than any point of the right one before refining.
  auto place = [&](bool host_adds) {
    CommFabric best = with(1e6, 1e-3, 0.0, false);
    double best_loss = std::numeric_limits<double>::infinity();
    for (double rate : rates) {
      for (double latency : latencies) {
        for (double host : host_rates) {
          if (host_adds && host == 0.0) continue;  // no host fabric: the two forms are one
          CommFabric f = with(rate, latency, host, host_adds);
          double l = loss(f, coarse);
          if (l < best_loss) best_loss = l, best = f;
        }
      }
    }
    if (spans_hosts) {
      const CommFabric intra_only = best;
      for (bool shared : {false, true}) {  // a port per GPU, or one per host
        for (double rate : rates) {
          for (double latency : latencies) {
            CommFabric f = intra_only;
            f.inter_bytes_per_ms = rate;
            f.inter_peer_latency_ms = latency;
            f.inter_shared_by_host = shared;
            double l = loss(f, coarse);
            if (l < best_loss) best_loss = l, best = f;
          }
        }
      }
    }
    return best;
  };
  // Coordinate search on every row with shrinking multiplicative steps.
  std::vector<double CommFabric::*> params = {&CommFabric::intra_bytes_per_ms, &CommFabric::intra_peer_latency_ms,
                                              &CommFabric::host_bytes_per_ms};
  if (spans_hosts) params.insert(params.end(), {&CommFabric::inter_bytes_per_ms, &CommFabric::inter_peer_latency_ms});
  auto refine = [&](CommFabric best) {
    double best_loss = loss(best, rows);
    for (double step : {2.0, 1.41, 1.19, 1.09, 1.04, 1.02}) {
      for (bool improved = true; improved;) {
        improved = false;
        for (auto param : params) {
          if (best.*param == 0.0) continue;  // a host fabric the grid found not to matter stays off
          for (double factor : {step, 1.0 / step}) {
            CommFabric f = best;
            f.*param *= factor;
            if (!spans_hosts)
              f.inter_bytes_per_ms = f.intra_bytes_per_ms, f.inter_peer_latency_ms = f.intra_peer_latency_ms;
            double l = loss(f, rows);
            if (l < best_loss - 1e-12) best_loss = l, best = f, improved = true;
          }
        }
      }
    }
    return std::make_pair(best, best_loss);
  };
  const auto bounding = refine(place(false));
  const auto adding = refine(place(true));
  const bool adds = adding.second < bounding.second - 1e-12;
  const auto& [best, best_loss] = adds ? adding : bounding;
  const double other_loss = adds ? bounding.second : adding.second;
  FabricFit fit;
  fit.fabric = start;
  fit.fabric.intra_bytes_per_ms = best.intra_bytes_per_ms;
  fit.fabric.intra_peer_latency_ms = best.intra_peer_latency_ms;
  fit.fabric.inter_bytes_per_ms = best.inter_bytes_per_ms;
  fit.fabric.inter_peer_latency_ms = best.inter_peer_latency_ms;
  fit.fabric.host_bytes_per_ms = best.host_bytes_per_ms;
  fit.fabric.host_adds = best.host_adds;
  fit.fabric.inter_shared_by_host = best.inter_shared_by_host;
  fit.mean_abs_log_error = best_loss;
  fit.other_form_error = other_loss;
  fit.inter_measured = spans_hosts;
  return fit;
}

}  // namespace shardplan
