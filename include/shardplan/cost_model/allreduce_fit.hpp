#pragma once
// The data-parallel gradients' all-reduce as measured. Per measured world size W, the ring all-reduce's
// two figures (comm_structure.hpp: 2(W-1) steps of a per-step latency, then 2(W-1)/W x bytes at a bus
// rate) fitted to `collect-costs comm` samples that timed an all-reduce (given workloads with
// allreduce_floats): a straight line in bytes, intercept >= 0 and slope > 0, so more bytes never cost
// less. Other world sizes use the figures of the largest measured size below them (the smallest one's
// below every measured size) in the ring's formula, so beyond the data the structure scales, as the
// all-to-all's correction holds still there; past one host the network's figures still bound them.
// No LibTorch here.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {

struct AllreduceFitPoint {
  int world_size = 0;
  double step_latency_ms = 0.0;   // >= 0
  double bus_bytes_per_ms = 0.0;  // > 0
  int samples = 0;
};

struct AllreduceFit {
  std::vector<AllreduceFitPoint> points;  // by world size, ascending; empty: the structure alone
};

// Per world size, the line minimising the squared relative error over its samples (each sample's mean
// over its ranks, since a ring finishes them together). Samples without an all-reduce are ignored; an
// empty fit when none has one.
AllreduceFit fit_allreduce(const std::vector<CommSample>& samples);

// The fitted all-reduce of `bytes` across `num_devices` (the structure alone when `fit` is empty).
double fitted_allreduce_ms(const AllreduceFit& fit, const CommFabric& fabric, double bytes, int num_devices);

// A sample's measured all-reduce: the mean over its ranks.
double measured_allreduce_ms(const CommSample& sample);

nlohmann::json allreduce_fit_to_json(const AllreduceFit& fit);
// Throws InputError naming `source` and the field.
AllreduceFit allreduce_fit_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path);

}  // namespace shardplan
