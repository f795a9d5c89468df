#pragma once
// Fits the all-to-all structure's figures (comm_structure.hpp) to measured all-to-alls, for hardware
// without a profile: what pretrain-cost-model does when it is given no --hardware.
#include <vector>

#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {

struct FabricFit {
  CommFabric fabric;
  double mean_abs_log_error = 0.0;  // of the backward times (no start delays) under the fitted figures
  double other_form_error = 0.0;    // the same, at the best figures of the host fabric's other form (host_adds)
  bool inter_measured = false;      // some samples spanned hosts; else the inter-host figures are the intra-host ones
};

// `start` gives the name, batch and GPUs per host; its rates are ignored. Samples record their own GPUs
// per host (CommSample::devices_per_host; 0: one host). Deterministic: a log grid over the rates and
// latencies, then a coordinate search around the best point. Throws InputError when there are no samples.
FabricFit fit_fabric(const std::vector<CommSample>& samples, CommFabric start);

// The fabric a sample ran on: `fabric` with the sample's GPUs per host (all its ranks when on one host).
CommFabric fabric_for_sample(const CommFabric& fabric, const CommSample& sample);

}  // namespace shardplan
