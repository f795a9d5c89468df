#pragma once
// `shard-plan evaluate`: a plan's per-device predicted costs and, when measured on this machine's device,
// its measured compute next to the prediction. No LibTorch here: measurements come in as numbers.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/measured_comm.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct DeviceEvaluation {
  DeviceUsage usage;
  DeviceCost predicted;
  std::optional<double> measured_compute_ms;    // when measured
  std::string not_measured;                     // why a device was skipped, when it was
  std::optional<double> measured_fw_ms;         // with the all-to-alls timed
  std::optional<double> measured_bw_ms;         // includes the all-reduce, as the predicted bw_comm_ms does
  std::optional<double> measured_allreduce_ms;  // the data-parallel gradients' part of it, when any
};

struct MeasuredSummary {
  int devices = 0;              // devices measured (empty ones count, at 0 ms)
  double max_compute_ms = 0.0;  // the slowest measured device
  int max_rank = 0;
  double predicted_max_compute_ms = 0.0;  // the model's max over the same devices
  double mape_percent = 0.0;              // |predicted - measured| / measured over non-empty measured devices
  double spearman = 0.0;                  // rank agreement of predicted and measured per-device compute
  // With the all-to-alls timed: the slowest device's step (compute, forward, backward).
  std::optional<double> max_total_ms;
  int max_total_rank = 0;
};

struct PlanEvaluation {
  std::string algorithm;
  std::string cost_model;
  ModelHardware cost_model_hardware;
  std::vector<DeviceEvaluation> devices;
  CostSummary predicted;  // its slowest is the device with the largest predicted total
  std::optional<MeasuredSummary> measured;
};

PlanEvaluation evaluate_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model);

// One measured compute latency per device (nullopt: skipped, with the reason in `skipped`).
void attach_measurements(PlanEvaluation& evaluation, const std::vector<std::optional<double>>& measured_ms,
                         const std::vector<std::string>& skipped);

// The plan's all-to-alls timed with its measured compute as start delays (after attach_measurements,
// with every device measured): adds each device's measured step.
void attach_comm_measurements(PlanEvaluation& evaluation, const MeasuredComm& comm);

nlohmann::ordered_json evaluation_to_json(const PlanEvaluation& evaluation);
std::string format_evaluation(const PlanEvaluation& evaluation);

}  // namespace shardplan
