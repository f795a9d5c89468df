#pragma once
// A plan's all-to-alls timed on real collectives (bench and evaluate --measure-comm), and the step they
// make with the measured compute. Plain numbers: the timing itself lives in the CLI and collector.
#include <cstdint>
#include <optional>
#include <vector>

#include "shardplan/core/plan.hpp"

namespace shardplan {

// One plan's all-to-all to time: per device, its output width and its measured compute (which delays its
// start: a device that finishes early waits in the forward all-to-all).
struct CommToMeasure {
  // The all-to-all's widths: table-wise and column-wise shards, and each table-row-wise table's share of
  // the all-to-all among hosts (its width spread over its host's ranks: each host's reduced sums go to
  // their owners).
  std::vector<int64_t> dim_sums;
  std::vector<double> compute_ms;
  // TorchRec's other collectives for the plan: the row-wise tables' summed width (reduce-scatter forward,
  // all-gather backward, every rank) and the data-parallel gradients' floats (all-reduce after the backward).
  int64_t rw_dim = 0;
  int64_t allreduce_floats = 0;
  // Per rank, its host's table-row-wise tables' summed width (reduce-scatter forward and all-gather
  // backward among the host's `devices_per_host` ranks); empty, and devices_per_host 0, without any.
  std::vector<int64_t> host_rw_dims;
  int devices_per_host = 0;
};

// One plan's all-to-alls, timed: per device, the forward (including its wait for devices that finish
// their compute later) and the backward, in ms.
struct MeasuredComm {
  std::vector<double> fw_ms;
  std::vector<double> bw_ms;
  std::vector<double> allreduce_ms;  // per device; empty when the plan has no data-parallel table
};

// The all-to-all of `plan` with each device's measured compute; nullopt when a device was not measured.
std::optional<CommToMeasure> comm_to_measure(const Plan& plan, const std::vector<std::optional<double>>& compute_ms);

// Per device: its compute, then the forward collectives, the backward ones and the all-reduce.
std::vector<double> measured_step_ms(const std::vector<double>& compute_ms, const MeasuredComm& comm);

}  // namespace shardplan
