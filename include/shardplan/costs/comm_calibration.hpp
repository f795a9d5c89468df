#pragma once
// The all-to-all half of `shard-plan calibrate --comm-ranks W`: times the collectives of plan-like
// layouts on W ranks of this host (calibration_sampler's plans: each device's width, and the base
// model's compute skew as start delays, the input the comm model predicts from), keeps them in the model
// directory so an interrupted calibration resumes, and fits the comm correction (comm_correction.hpp) on
// most of them, with its error before and after on the rest. The timing itself is the caller's (the CLI
// spawns the ranks), so tests time on a fake host.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/measured_comm.hpp"
#include "shardplan/cost_model/comm_correction.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/costs/calibration_sampler.hpp"
#include "shardplan/costs/measure.hpp"

namespace shardplan {

struct CommCalibrationConfig {
  int world_size = 0;             // ranks timed on this host
  int64_t batch_size = 2048;      // the global batch the comm model predicts for
  int64_t plans = 40;             // plans to time
  double holdout_fraction = 0.2;  // plans kept out of the fit to measure it
  CalibrationSampling sampling;   // the tables and seed the plans are drawn with
  std::string data_path;          // the timed plans (JSON), read to resume and rewritten
  nlohmann::json settings;        // what a timed plan means (base model, batch): a resume must match
};

struct CommCalibrationData {
  std::vector<CommObservation> tuning, held_out;
  int64_t timed_now = 0;     // plans this run timed
  bool interrupted = false;  // Ctrl-C or a failed timing left plans untimed: re-run to resume
};

// Draws plans 0.. until config.plans are timed (or the draws run out), timing in one call those not kept
// from an earlier run. `model` plans the neuroshard draws and predicts the compute that delays each rank.
// Throws InputError when config.data_path holds plans timed with other settings.
CommCalibrationData time_calibration_plans(const std::vector<Table>& pool, const CommCalibrationConfig& config,
                                           const std::shared_ptr<const CostModel>& model, const CommTimer& timer);

struct CommCalibrationFit {
  CommCorrection correction;  // what the new model carries
  CommErrors before, after;   // on the held-out plans: the base model as it was, then with the fit
  bool kept_base = false;     // the fit was no better on the held-out plans: `correction` is the base's
  nlohmann::json to_json() const;
};

// `raw` predicts without any correction; `base` is the correction the base model carried (identity for
// most). The fit replaces it only where it lowers the held-out per-device error of forward plus backward.
CommCalibrationFit fit_comm_calibration(const CostModel& raw, const CommCorrection& base,
                                        const CommCalibrationData& data);

}  // namespace shardplan
