#include "shardplan/cost_model/comm_correction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/cost_model/metrics.hpp"

namespace shardplan {

namespace {

constexpr double kMinFittedScale = 0.05;

double latest_of(const std::vector<double>& compute_ms) {
  return compute_ms.empty() ? 0.0 : *std::max_element(compute_ms.begin(), compute_ms.end());
}

// Least squares of y on a + b x; through the origin when the affine fit's slope is not usable.
void fit_affine(const std::vector<double>& x, const std::vector<double>& y, double& offset, double& scale) {
  offset = 0.0;
  scale = 1.0;
  const auto n = static_cast<double>(x.size());
  if (x.empty()) return;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double var = n * sxx - sx * sx;
  if (x.size() >= 3 && var > 1e-12 * n * sxx) {
    const double b = (n * sxy - sx * sy) / var;
    if (b >= kMinFittedScale) {
      scale = b;
      offset = (sy - b * sx) / n;
      return;
    }
  }
  // Held at the floor the model files accept: a model written must load again.
  if (sxx > 0.0 && sxy > 0.0) scale = std::max(kMinFittedScale, sxy / sxx);
}

double mape_of(const std::vector<double>& predicted, const std::vector<double>& measured) {
  return predicted.empty() ? 0.0 : compute_metrics(predicted, measured).mape;
}

}  // namespace

double corrected_transfer_ms(double ms, double offset_ms, double scale) {
  return std::max(kCommCorrectionFloor * ms, offset_ms + scale * ms);
}

void apply_comm_correction(const CommCorrection& c, const std::vector<double>& compute_ms, std::vector<double>& fw_ms,
                           std::vector<double>& bw_ms) {
  // One device exchanges nothing: the nets say 0, and an offset must not make it pay.
  if (c.is_identity() || fw_ms.size() < 2) return;
  const double latest = latest_of(compute_ms);
  for (std::size_t r = 0; r < fw_ms.size(); ++r) {
    const double wait = r < compute_ms.size() ? latest - compute_ms[r] : 0.0;
    fw_ms[r] = wait + corrected_transfer_ms(fw_ms[r] - wait, c.fw_offset_ms, c.fw_scale);
    bw_ms[r] = corrected_transfer_ms(bw_ms[r], c.bw_offset_ms, c.bw_scale);
  }
}

CommCorrection fit_comm_correction(const CostModel& model, const std::vector<CommObservation>& observations) {
  std::vector<double> fw_predicted, fw_measured, bw_predicted, bw_measured;
  std::vector<double> fw, bw;
  for (const CommObservation& o : observations) {
    model.predict_comm(o.dim_sums, o.compute_ms, fw, bw);
    const double latest = latest_of(o.compute_ms);
    for (std::size_t r = 0; r < fw.size() && r < o.fw_ms.size(); ++r) {
      // Both sides' transfer: the timed forward waited for the same delays the model was given.
      const double wait = latest - o.compute_ms[r];
      fw_predicted.push_back(fw[r] - wait);
      fw_measured.push_back(o.fw_ms[r] - wait);
      bw_predicted.push_back(bw[r]);
      bw_measured.push_back(o.bw_ms[r]);
    }
  }
  CommCorrection c;
  fit_affine(fw_predicted, fw_measured, c.fw_offset_ms, c.fw_scale);
  fit_affine(bw_predicted, bw_measured, c.bw_offset_ms, c.bw_scale);
  return c;
}

nlohmann::json CommErrors::to_json() const {
  auto round3 = [](double v) { return std::round(v * 1000.0) / 1000.0; };
  return {{"devices", devices},
          {"fw_mape_percent", round3(fw_mape_percent)},
          {"bw_mape_percent", round3(bw_mape_percent)},
          {"total_mape_percent", round3(total_mape_percent)}};
}

CommErrors comm_errors(const CostModel& model, const CommCorrection& correction,
                       const std::vector<CommObservation>& observations) {
  std::vector<double> fw_predicted, fw_measured, bw_predicted, bw_measured, total_predicted, total_measured;
  std::vector<double> fw, bw;
  for (const CommObservation& o : observations) {
    model.predict_comm(o.dim_sums, o.compute_ms, fw, bw);
    apply_comm_correction(correction, o.compute_ms, fw, bw);
    for (std::size_t r = 0; r < fw.size() && r < o.fw_ms.size(); ++r) {
      fw_predicted.push_back(fw[r]);
      fw_measured.push_back(o.fw_ms[r]);
      bw_predicted.push_back(bw[r]);
      bw_measured.push_back(o.bw_ms[r]);
      total_predicted.push_back(fw[r] + bw[r]);
      total_measured.push_back(o.fw_ms[r] + o.bw_ms[r]);
    }
  }
  CommErrors e;
  e.devices = static_cast<int>(fw_predicted.size());
  e.fw_mape_percent = mape_of(fw_predicted, fw_measured);
  e.bw_mape_percent = mape_of(bw_predicted, bw_measured);
  e.total_mape_percent = mape_of(total_predicted, total_measured);
  return e;
}

nlohmann::json comm_correction_to_json(const CommCorrection& c) {
  return {{"form",
           "per direction, transfer = max(offset + scale x the net's transfer, 0.25 x it); the forward's "
           "wait for later devices is kept"},
          {"fw_offset_ms", c.fw_offset_ms},
          {"fw_scale", c.fw_scale},
          {"bw_offset_ms", c.bw_offset_ms},
          {"bw_scale", c.bw_scale}};
}

CommCorrection comm_correction_from_json(const nlohmann::json& doc, const std::string& source,
                                         const std::string& path) {
  read_object(doc, source, path);
  auto number = [&](const char* key, double min, double max) {
    return read_double(require_member(doc, key, source, path), source, path + "." + key, min, max);
  };
  CommCorrection c;
  c.fw_offset_ms = number("fw_offset_ms", -1e6, 1e6);
  c.fw_scale = number("fw_scale", kMinFittedScale, 1e6);
  c.bw_offset_ms = number("bw_offset_ms", -1e6, 1e6);
  c.bw_scale = number("bw_scale", kMinFittedScale, 1e6);
  return c;
}

}  // namespace shardplan
