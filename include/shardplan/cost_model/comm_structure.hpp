#pragma once
// The physical structure of a DLRM all-to-all on a cluster of hosts: how many bytes each GPU moves over
// its host's links and over the network, and the time that takes at given bandwidths and per-peer
// latencies. The neural comm model learns only what measurement says beyond this; a plan on hardware
// nobody measured gets this estimate alone. No LibTorch, no JSON.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/comm_fabric.hpp"

namespace shardplan {

// One device's traffic in one all-to-all (the forward and the backward move the same bytes, reversed).
struct AllToAllVolume {
  double intra_out = 0, intra_in = 0;  // bytes to and from GPUs on its host
  double inter_out = 0, inter_in = 0;  // bytes to and from GPUs on other hosts
  double host = 0;  // bytes crossing its host's shared fabric (sent by its host, or received from others)
  // Through a network port its host's GPUs share, fairly: what the port carries until this GPU's traffic
  // is through, the sum over the host's GPUs of min(theirs, its own), sent and received.
  double shared_port_out = 0, shared_port_in = 0;
  int intra_peers = 0, inter_peers = 0;
};

// Rank r is on host r / devices_per_host. dim_sums[r]: the sum of rank r's shard widths; rank r sends
// each rank j the rows of j's batch_size / W samples, (B/W) x dim_sums[r] values.
std::vector<AllToAllVolume> alltoall_volumes(const CommFabric& fabric, const std::vector<int64_t>& dim_sums);

// A device's structural times in ms: the total (below) and the parts it is built from, each
// non-decreasing in every width (they are the comm network's monotone inputs).
struct AllToAllTimes {
  double total = 0;    // hierarchical_alltoall_ms
  double out = 0;      // sending at the link rates: intra_out / intra rate + inter_out / inter rate
  double in = 0;       // receiving, likewise
  double host = 0;     // host bytes / host rate (0 when not shared)
  double latency = 0;  // the per-peer latencies
};
void hierarchical_alltoall_times(const CommFabric& fabric, const std::vector<int64_t>& dim_sums,
                                 std::vector<AllToAllTimes>& out);

// The structural time of one direction per device, in ms: its links run concurrently, so the slowest of
//   intra: intra_peers x latency + max(intra_out, intra_in) / intra rate,
//   inter: inter_peers x latency + max(inter_out, inter_in) / inter rate (through a port the host's
//          GPUs share: max(shared_port_out, shared_port_in) / inter rate),
//   host:  host bytes / host rate.
// Non-decreasing in every width: more bytes never cost less. `out` is resized to the device count.
void hierarchical_alltoall_ms(const CommFabric& fabric, const std::vector<int64_t>& dim_sums, std::vector<double>& out);

// The input all-to-all before the lookups (TorchRec's KJT dist): every rank sends each rank the ids (and
// one length per feature and sample) of its own B / W samples that rank's pieces look up, so rank r
// receives from each peer (B / W) x ids_per_sample[r] ids of kInputIdBytes: the output all-to-all's
// traffic, reversed, at kInputIdBytes / element_bytes width units per id, through the same links. Per
// device, in ms; the plan's ids per sample come from device_input_ids (plan.hpp).
constexpr int64_t kInputIdBytes = 8;  // int64 ids and lengths, TorchRec's KeyedJaggedTensor default
void input_alltoall_ms(const CommFabric& fabric, const std::vector<double>& ids_per_sample, std::vector<double>& out);

// An all-to-all of no payload on `num_devices` GPUs, in ms: its slowest device's peers' latencies alone
// (what hierarchical_alltoall_ms gives the slowest device for zero widths).
double alltoall_latency_ms(const CommFabric& fabric, int num_devices);

// One device's structural total from its traffic (what hierarchical_alltoall_ms gives each device).
double structural_transfer_ms(const CommFabric& fabric, const AllToAllVolume& volume);

// A ring all-reduce of `bytes` over `num_devices` GPUs (data-parallel gradients), in ms: every GPU sends
// and receives 2 (W - 1) / W x bytes in 2 (W - 1) steps, each paying a per-peer latency, at the pace of
// the ring's slowest link (the network once the ring leaves a host, a shared port split among the host's
// GPUs), and a host's shared fabric carries all its GPUs' traffic. 0 for one GPU or no bytes.
double ring_allreduce_ms(const CommFabric& fabric, double bytes, int num_devices);

// Throws InputError naming the field when a figure is not usable (rates must be positive).
void validate_fabric(const CommFabric& fabric, const std::string& source);

}  // namespace shardplan
