#include "shardplan/cost_model/comm_structure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

// alltoall_volumes into `out`, reusing this thread's buffers: the search predicts an all-to-all for every
// candidate change. The shared-port sums (a sort per host) only when `shared_port` asks for them.
void volumes_into(const CommFabric& fabric, const std::vector<double>& dim_sums, bool shared_port,
                  std::vector<AllToAllVolume>& out) {
  const std::size_t n = dim_sums.size();
  out.assign(n, AllToAllVolume{});
  if (n < 2) return;
  const auto per_host = static_cast<std::size_t>(std::max(1, fabric.devices_per_host));
  const std::size_t hosts = (n + per_host - 1) / per_host;
  thread_local std::vector<double> host_width;
  thread_local std::vector<std::size_t> host_devices;
  host_width.assign(hosts, 0.0);
  host_devices.assign(hosts, 0);
  double total = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    host_width[r / per_host] += dim_sums[r];
    ++host_devices[r / per_host];
    total += dim_sums[r];
  }
  // Bytes per unit of width to one peer: that peer's share of the batch.
  const double unit =
      static_cast<double>(fabric.batch_size) / static_cast<double>(n) * static_cast<double>(fabric.element_bytes);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t h = r / per_host;
    const double width = dim_sums[r];
    const auto local = static_cast<double>(host_devices[h]);
    AllToAllVolume& v = out[r];
    v.intra_peers = static_cast<int>(host_devices[h]) - 1;
    v.inter_peers = static_cast<int>(n - host_devices[h]);
    v.intra_out = unit * width * (local - 1.0);
    v.intra_in = unit * (host_width[h] - width);
    v.inter_out = unit * width * static_cast<double>(v.inter_peers);
    v.inter_in = unit * (total - host_width[h]);
    // Everything the host's GPUs send, plus what arrives from other hosts.
    v.host = unit * (host_width[h] * static_cast<double>(n - 1) + (total - host_width[h]) * local);
  }
  if (!shared_port) return;
  // A fairly shared port serves every GPU's traffic at an equal rate until the smaller ones are through
  // (processor sharing): a GPU's traffic is through after sum over its host of min(theirs, its own).
  thread_local std::vector<double> sorted_out, sorted_in, prefix_out, prefix_in;
  auto through = [](const std::vector<double>& sorted, const std::vector<double>& prefix, double own) {
    const auto below = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), own) - sorted.begin());
    return prefix[below] + own * static_cast<double>(sorted.size() - below);
  };
  for (std::size_t h = 0; h < hosts; ++h) {
    const std::size_t begin = h * per_host;
    const std::size_t end = std::min(n, begin + per_host);
    sorted_out.clear();
    sorted_in.clear();
    for (std::size_t r = begin; r < end; ++r) {
      sorted_out.push_back(out[r].inter_out);
      sorted_in.push_back(out[r].inter_in);
    }
    std::sort(sorted_out.begin(), sorted_out.end());
    std::sort(sorted_in.begin(), sorted_in.end());
    prefix_out.assign(1, 0.0);
    prefix_in.assign(1, 0.0);
    for (std::size_t k = 0; k < sorted_out.size(); ++k) {
      prefix_out.push_back(prefix_out.back() + sorted_out[k]);
      prefix_in.push_back(prefix_in.back() + sorted_in[k]);
    }
    for (std::size_t r = begin; r < end; ++r) {
      out[r].shared_port_out = through(sorted_out, prefix_out, out[r].inter_out);
      out[r].shared_port_in = through(sorted_in, prefix_in, out[r].inter_in);
    }
  }
}

// A transfer of `links_ms` on the GPU's own links, while the host's shared fabric carries `host_bytes`:
// the slower of the two, or their sum where the fabric adds (CommFabric::host_adds).
double with_host_fabric(const CommFabric& fabric, double links_ms, double host_bytes) {
  if (!(fabric.host_bytes_per_ms > 0)) return links_ms;
  const double host_ms = host_bytes / fabric.host_bytes_per_ms;
  return fabric.host_adds ? links_ms + host_ms : std::max(links_ms, host_ms);
}

// The widths as the structure computes with them, in this thread's buffer.
const std::vector<double>& as_widths(const std::vector<int64_t>& dim_sums) {
  thread_local std::vector<double> widths;
  widths.assign(dim_sums.begin(), dim_sums.end());
  return widths;
}

void times_into(const CommFabric& fabric, const std::vector<double>& widths, std::vector<AllToAllTimes>& out) {
  thread_local std::vector<AllToAllVolume> volumes;
  volumes_into(fabric, widths, fabric.inter_shared_by_host, volumes);
  out.assign(widths.size(), AllToAllTimes{});
  if (widths.size() < 2) return;
  for (std::size_t r = 0; r < volumes.size(); ++r) {
    const AllToAllVolume& v = volumes[r];
    AllToAllTimes& t = out[r];
    t.total = structural_transfer_ms(fabric, v);
    if (fabric.host_bytes_per_ms > 0) t.host = v.host / fabric.host_bytes_per_ms;
    t.out =
        v.intra_out / fabric.intra_bytes_per_ms + (v.inter_peers > 0 ? v.inter_out / fabric.inter_bytes_per_ms : 0.0);
    t.in = v.intra_in / fabric.intra_bytes_per_ms + (v.inter_peers > 0 ? v.inter_in / fabric.inter_bytes_per_ms : 0.0);
    t.latency = v.intra_peers * fabric.intra_peer_latency_ms + v.inter_peers * fabric.inter_peer_latency_ms;
  }
}

}  // namespace

std::vector<AllToAllVolume> alltoall_volumes(const CommFabric& fabric, const std::vector<int64_t>& dim_sums) {
  std::vector<AllToAllVolume> out;
  volumes_into(fabric, as_widths(dim_sums), /*shared_port=*/true, out);
  return out;
}

double structural_transfer_ms(const CommFabric& fabric, const AllToAllVolume& v) {
  double t = 0.0;
  if (v.intra_peers > 0) {
    t = v.intra_peers * fabric.intra_peer_latency_ms + std::max(v.intra_out, v.intra_in) / fabric.intra_bytes_per_ms;
  }
  if (v.inter_peers > 0) {
    const double bytes =
        fabric.inter_shared_by_host ? std::max(v.shared_port_out, v.shared_port_in) : std::max(v.inter_out, v.inter_in);
    t = std::max(t, v.inter_peers * fabric.inter_peer_latency_ms + bytes / fabric.inter_bytes_per_ms);
  }
  return with_host_fabric(fabric, t, v.host);
}

void hierarchical_alltoall_times(const CommFabric& fabric, const std::vector<int64_t>& dim_sums,
                                 std::vector<AllToAllTimes>& out) {
  times_into(fabric, as_widths(dim_sums), out);
}

void hierarchical_alltoall_ms(const CommFabric& fabric, const std::vector<int64_t>& dim_sums,
                              std::vector<double>& out) {
  thread_local std::vector<AllToAllTimes> times;
  hierarchical_alltoall_times(fabric, dim_sums, times);
  out.resize(times.size());
  for (std::size_t r = 0; r < times.size(); ++r) out[r] = times[r].total;
}

void input_alltoall_ms(const CommFabric& fabric, const std::vector<double>& ids_per_sample, std::vector<double>& out) {
  thread_local std::vector<double> widths;
  thread_local std::vector<AllToAllTimes> times;
  const double per_id = static_cast<double>(kInputIdBytes) / static_cast<double>(fabric.element_bytes);
  widths.resize(ids_per_sample.size());
  for (std::size_t r = 0; r < widths.size(); ++r) widths[r] = ids_per_sample[r] * per_id;
  times_into(fabric, widths, times);
  out.resize(times.size());
  for (std::size_t r = 0; r < times.size(); ++r) out[r] = times[r].total;
}

double alltoall_latency_ms(const CommFabric& fabric, int num_devices) {
  if (num_devices < 2) return 0.0;
  const int per_host = std::max(1, std::min(fabric.devices_per_host, num_devices));
  // The device with the most peers across hosts sits on the smallest host, the last one.
  const int last_host = num_devices % per_host == 0 ? per_host : num_devices % per_host;
  double t = (per_host - 1) * fabric.intra_peer_latency_ms;
  if (num_devices > per_host) t = std::max(t, (num_devices - last_host) * fabric.inter_peer_latency_ms);
  return t;
}

double ring_allreduce_ms(const CommFabric& fabric, double bytes, int num_devices) {
  if (num_devices < 2 || bytes <= 0.0) return 0.0;
  const double w = static_cast<double>(num_devices);
  const double per_gpu = 2.0 * (w - 1.0) / w * bytes;
  const double steps = 2.0 * (w - 1.0);
  const int per_host = std::max(1, std::min(fabric.devices_per_host, num_devices));
  double rate = fabric.intra_bytes_per_ms;
  double latency = fabric.intra_peer_latency_ms;
  if (num_devices > fabric.devices_per_host) {
    const double network = fabric.inter_bytes_per_ms / (fabric.inter_shared_by_host ? per_host : 1);
    rate = std::min(rate, network);
    latency = std::max(latency, fabric.inter_peer_latency_ms);
  }
  return with_host_fabric(fabric, steps * latency + per_gpu / rate, per_host * per_gpu);
}

void validate_fabric(const CommFabric& fabric, const std::string& source) {
  auto need = [&](bool ok, const char* field, double value) {
    if (!ok) throw InputError(fmt::format("{}: {}: must be positive and finite, got {}", source, field, value));
  };
  need(fabric.devices_per_host >= 1, "gpus_per_host", fabric.devices_per_host);
  need(std::isfinite(fabric.intra_bytes_per_ms) && fabric.intra_bytes_per_ms > 0, "intra_host.bandwidth_GBps",
       fabric.intra_bytes_per_ms / 1e6);
  need(std::isfinite(fabric.inter_bytes_per_ms) && fabric.inter_bytes_per_ms > 0, "inter_host.bandwidth_GBps",
       fabric.inter_bytes_per_ms / 1e6);
  need(fabric.batch_size >= 1, "batch_size", static_cast<double>(fabric.batch_size));
}

}  // namespace shardplan
