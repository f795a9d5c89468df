#include "shardplan/costs/comm_calibration.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/random.hpp"

namespace shardplan {

namespace {

constexpr const char* kFormat = "shard-plan/comm-calibration/1";
constexpr uint64_t kCommHoldoutStream = 0x636f6d6d686f6c64ull;  // "commhold"
// Drawn tasks that cannot be planned are skipped; past this many draws per wanted plan, calibrate stops.
constexpr int64_t kDrawsPerPlan = 4;
constexpr std::size_t kMinTuningPlans = 3;

struct TimedPlan {
  int64_t index = 0;
  std::string origin;
  CommObservation observation;
};

nlohmann::json plan_to_json(const TimedPlan& p) {
  const CommObservation& o = p.observation;
  return {{"index", p.index},           {"origin", p.origin}, {"dim_sums", o.dim_sums},
          {"compute_ms", o.compute_ms}, {"fw_ms", o.fw_ms},   {"bw_ms", o.bw_ms}};
}

TimedPlan plan_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    TimedPlan p;
    p.index = j.at("index").get<int64_t>();
    p.origin = j.value("origin", "");
    CommObservation& o = p.observation;
    o.dim_sums = j.at("dim_sums").get<std::vector<int64_t>>();
    o.compute_ms = j.at("compute_ms").get<std::vector<double>>();
    o.fw_ms = j.at("fw_ms").get<std::vector<double>>();
    o.bw_ms = j.at("bw_ms").get<std::vector<double>>();
    const std::size_t n = o.dim_sums.size();
    if (o.compute_ms.size() != n || o.fw_ms.size() != n || o.bw_ms.size() != n) {
      throw InputError(
          fmt::format("{}: plan {}: dim_sums, compute_ms, fw_ms and bw_ms must be as long", source, p.index));
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: a timed plan is malformed: {}", source, e.what()));
  }
}

// The plans an earlier run timed, by index; empty when there is no file yet.
std::map<int64_t, TimedPlan> read_timed(const CommCalibrationConfig& config) {
  std::map<int64_t, TimedPlan> timed;
  std::error_code ec;
  if (!std::filesystem::exists(config.data_path, ec)) return timed;
  nlohmann::json doc = read_json_file(config.data_path);
  if (doc.value("format", "") != kFormat || doc.value("settings", nlohmann::json()) != config.settings) {
    throw InputError(
        fmt::format("{}: its all-to-alls were timed with other settings ({}) than this run's ({}); "
                    "calibrate into another model directory, or remove it",
                    config.data_path, doc.value("settings", nlohmann::json()).dump(), config.settings.dump()));
  }
  for (const auto& j : doc.value("plans", nlohmann::json::array())) {
    TimedPlan p = plan_from_json(j, config.data_path);
    timed[p.index] = std::move(p);
  }
  return timed;
}

void write_timed(const CommCalibrationConfig& config, const std::map<int64_t, TimedPlan>& timed) {
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& [index, p] : timed) plans.push_back(plan_to_json(p));
  nlohmann::json doc = {{"format", kFormat}, {"settings", config.settings}, {"plans", plans}};
  write_file_atomically(config.data_path, doc.dump(1) + "\n");
}

// A timing that is not a finite, non-negative number of ms is no timing.
bool all_timings_usable(const MeasuredComm& m) {
  auto usable = [](double ms) { return std::isfinite(ms) && ms >= 0.0; };
  return m.fw_ms.size() == m.bw_ms.size() && std::all_of(m.fw_ms.begin(), m.fw_ms.end(), usable) &&
         std::all_of(m.bw_ms.begin(), m.bw_ms.end(), usable);
}

// The plans still to time, drawn by index (skipping those an earlier run timed) until the plans are
// complete or the draws run out: the widths the planner's own score sends (data-parallel replicas send
// none) and the compute the model predicts for each device, which delays its start.
std::vector<TimedPlan> plans_to_time(const std::vector<Table>& pool, const CommCalibrationConfig& config,
                                     const std::shared_ptr<const CostModel>& model,
                                     const std::map<int64_t, TimedPlan>& timed) {
  std::vector<TimedPlan> to_time;
  const int64_t wanted =
      config.plans - static_cast<int64_t>(std::min<std::size_t>(timed.size(), static_cast<std::size_t>(config.plans)));
  for (int64_t index = 0; static_cast<int64_t>(to_time.size()) < wanted && index < kDrawsPerPlan * config.plans;
       ++index) {
    if (timed.count(index) != 0) continue;
    std::optional<CalibrationPlan> plan = draw_calibration_plan(pool, config.sampling, model, config.world_size, index);
    if (!plan) continue;
    TimedPlan p;
    p.index = index;
    p.origin = plan->origin;
    for (const DeviceShards& device : plan->devices) p.observation.dim_sums.push_back(device.dim_sum);
    p.observation.compute_ms = model->predict_compute(compute_sets(plan->devices));
    to_time.push_back(std::move(p));
  }
  return to_time;
}

// Times `to_time` in one call of the timer; those timed join `timed`, which is written back. Returns how
// many were timed.
int64_t time_plans(std::vector<TimedPlan>& to_time, std::map<int64_t, TimedPlan>& timed,
                   const CommCalibrationConfig& config, const CommTimer& timer) {
  std::vector<CommToMeasure> workloads;
  for (const TimedPlan& p : to_time) {
    CommToMeasure w;
    w.dim_sums = p.observation.dim_sums;
    w.compute_ms = p.observation.compute_ms;
    workloads.push_back(std::move(w));
  }
  spdlog::info("timing the all-to-alls of {} plans on {} ranks", workloads.size(), config.world_size);
  std::vector<std::optional<MeasuredComm>> results = timer(workloads, config.batch_size);
  int64_t timed_now = 0;
  for (std::size_t k = 0; k < to_time.size() && k < results.size(); ++k) {
    if (!results[k] || results[k]->fw_ms.size() != to_time[k].observation.dim_sums.size() ||
        !all_timings_usable(*results[k])) {
      continue;  // left untimed: a re-run times it again
    }
    to_time[k].observation.fw_ms = results[k]->fw_ms;
    to_time[k].observation.bw_ms = results[k]->bw_ms;
    timed[to_time[k].index] = std::move(to_time[k]);
    ++timed_now;
  }
  std::filesystem::create_directories(std::filesystem::path(config.data_path).parent_path());
  write_timed(config, timed);
  return timed_now;
}

// The first config.plans plans by index (a re-run asking for fewer fits on fewer), each held out or tuned on.
void split_timed(std::map<int64_t, TimedPlan>& timed, const CommCalibrationConfig& config, CommCalibrationData& data) {
  const uint64_t holdout_seed = derive_seed(config.sampling.seed, kCommHoldoutStream);
  int64_t used = 0;
  for (auto& [index, p] : timed) {
    if (used++ == config.plans) break;
    (is_held_out(holdout_seed, index, config.holdout_fraction) ? data.held_out : data.tuning).push_back(p.observation);
  }
  // A few plans may draw no held-out index: the last tuning plan is held out then, so a fit is always judged.
  if (data.held_out.empty() && data.tuning.size() > kMinTuningPlans) {
    data.held_out.push_back(std::move(data.tuning.back()));
    data.tuning.pop_back();
  }
}

}  // namespace

CommCalibrationData time_calibration_plans(const std::vector<Table>& pool, const CommCalibrationConfig& config,
                                           const std::shared_ptr<const CostModel>& model, const CommTimer& timer) {
  if (config.world_size < 2)
    throw SettingError("all-to-all ranks", fmt::format("must be at least 2, got {}", config.world_size));
  if (config.batch_size % config.world_size != 0) {
    throw SettingError("all-to-all ranks",
                       fmt::format("{} ranks cannot split the comm model's global batch of {} evenly",
                                   config.world_size, config.batch_size));
  }
  std::map<int64_t, TimedPlan> timed = read_timed(config);
  if (!timed.empty()) spdlog::info("{}: resuming after {} timed plans", config.data_path, timed.size());
  std::vector<TimedPlan> to_time = plans_to_time(pool, config, model, timed);
  CommCalibrationData data;
  if (!to_time.empty() && !interrupt_requested()) data.timed_now = time_plans(to_time, timed, config, timer);
  data.interrupted = interrupt_requested() || data.timed_now < static_cast<int64_t>(to_time.size());
  if (static_cast<int64_t>(timed.size()) < config.plans && !data.interrupted) {
    spdlog::warn("calibrate: only {} of the drawn tasks could be planned on {} devices ({} all-to-all plans asked for)",
                 timed.size(), config.world_size, config.plans);
  }
  split_timed(timed, config, data);
  return data;
}

nlohmann::json CommCalibrationFit::to_json() const {
  return {{"before", before.to_json()},
          {"after", after.to_json()},
          {"kept_base", kept_base},
          {"correction", comm_correction_to_json(correction)}};
}

CommCalibrationFit fit_comm_calibration(const CostModel& raw, const CommCorrection& base,
                                        const CommCalibrationData& data) {
  if (data.tuning.size() < kMinTuningPlans || data.held_out.empty()) {
    throw SettingError("all-to-all plans",
                       fmt::format("{} timed plans to fit the all-to-all on and {} held out are too few (need {} and "
                                   "1); raise it and re-run to resume",
                                   data.tuning.size(), data.held_out.size(), kMinTuningPlans));
  }
  CommCalibrationFit fit;
  fit.before = comm_errors(raw, base, data.held_out);
  const CommCorrection fitted = fit_comm_correction(raw, data.tuning);
  const CommErrors after = comm_errors(raw, fitted, data.held_out);
  // Kept only where strictly better held out (a NaN error is not).
  fit.kept_base = !(after.total_mape_percent < fit.before.total_mape_percent);
  fit.correction = fit.kept_base ? base : fitted;
  fit.after = after;
  return fit;
}

}  // namespace shardplan
