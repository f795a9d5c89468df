#pragma once
// The all-to-all of a cost model corrected by timings of this host (`calibrate --comm-ranks`): each
// direction's transfer time, the part of a device's collective that is not its wait for later devices'
// compute, becomes offset + scale x transfer. Why affine, not a fine-tuning of the comm net: timed on the
// 2-core VM, the bundled net's backward slopes in the widths matched the timed ones within 11% while its
// level was 0.6 ms (20%) too high (docs/calibration.md); two numbers per direction say that, and keep the
// net's shape, which 40 timed plans could not retrain. No LibTorch.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct CommCorrection {
  double fw_offset_ms = 0.0, fw_scale = 1.0;
  double bw_offset_ms = 0.0, bw_scale = 1.0;
  bool is_identity() const { return fw_offset_ms == 0.0 && fw_scale == 1.0 && bw_offset_ms == 0.0 && bw_scale == 1.0; }
};

// A transfer time corrected: offset + scale x ms, never below kCommCorrectionFloor x ms (a negative offset
// must not make a small transfer free); non-decreasing in ms for a positive scale.
inline constexpr double kCommCorrectionFloor = 0.25;
double corrected_transfer_ms(double ms, double offset_ms, double scale);

// Applies the correction to a model's per-device prediction in place: the forward's wait for the latest
// device (the largest of compute_ms minus the device's own) is kept, its transfer corrected. A single
// device is left as it is (no all-to-all).
void apply_comm_correction(const CommCorrection& correction, const std::vector<double>& compute_ms,
                           std::vector<double>& fw_ms, std::vector<double>& bw_ms);

// One plan's all-to-all timed on this host: per device, its width and the compute that delayed its start
// (also the model's input), and the timed forward (with its wait) and backward.
struct CommObservation {
  std::vector<int64_t> dim_sums;
  std::vector<double> compute_ms;
  std::vector<double> fw_ms, bw_ms;
};

// Least squares of the timed transfer on the model's, per direction, over every device of every
// observation; a fit with a scale below 0.05 (the model's transfer tells nothing) falls back to a scale
// through the origin, itself held at 0.05. `model` predicts uncorrected: a NeuralCostModel without a
// correction.
CommCorrection fit_comm_correction(const CostModel& model, const std::vector<CommObservation>& observations);

// Per-device error of the model's all-to-all (with `correction` applied) on timed plans: MAPE of the
// forward and of the backward, and of each device's forward plus backward.
struct CommErrors {
  int devices = 0;
  double fw_mape_percent = 0.0, bw_mape_percent = 0.0, total_mape_percent = 0.0;
  nlohmann::json to_json() const;
};
CommErrors comm_errors(const CostModel& model, const CommCorrection& correction,
                       const std::vector<CommObservation>& observations);

// meta.json's comm.correction: {"fw_offset_ms", "fw_scale", "bw_offset_ms", "bw_scale"} (scales positive).
nlohmann::json comm_correction_to_json(const CommCorrection& correction);
CommCorrection comm_correction_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path);

}  // namespace shardplan
