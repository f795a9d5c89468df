#pragma once
// A cluster's links in the units the all-to-all's structure (comm_structure.hpp) computes with: a hardware
// profile's values as the cost model uses them, and what a model directory records of the hardware its
// comm data was measured on. No JSON here.
#include <cstdint>
#include <string>

namespace shardplan {

// What the estimate needs of the hardware (fabric_of in hardware_profile.hpp reads it from a profile). Rates
// are per GPU and per direction; host_bytes_per_ms is a fabric all of a host's GPUs share (a CPU host's
// memory copies), 0 when they do not share one (NVSwitch is non-blocking).
struct CommFabric {
  std::string name;
  int devices_per_host = 8;
  double intra_bytes_per_ms = 0.0;
  double intra_peer_latency_ms = 0.0;  // per peer on the same host
  double inter_bytes_per_ms = 0.0;
  double inter_peer_latency_ms = 0.0;  // per peer on another host
  bool inter_shared_by_host = false;   // one network port per host, shared by its GPUs (else one per GPU)
  double host_bytes_per_ms = 0.0;
  // How the host's shared fabric meets a GPU's own links: false, the slower of the two bounds it (a
  // switch that carries every link at once); true, its share adds to them (ranks that share the cores
  // doing the copies, as Gloo ranks on one CPU host do; docs/cost-models.md).
  bool host_adds = false;
  int64_t batch_size = 2048;  // global batch; each rank owns batch_size / W samples
  int64_t element_bytes = 4;  // fp32 pooled embeddings and their gradients
};

}  // namespace shardplan
