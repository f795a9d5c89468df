// Measured-in-the-loop planning: search, measure what bounds the best plans, correct, search again.
#include "shardplan/measure_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "shardplan/cost_correction.hpp"
#include "shardplan/errors.hpp"
#include "shardplan/neuroshard.hpp"

namespace shardplan {

void validate_measure_loop_config(const MeasureLoopConfig& c) {
  if (c.budget < 1 || c.budget > 100000) throw InputError(fmt::format("--measure-loop: must be in [1, 100000] shard sets, got {}", c.budget));
  if (c.candidates < 1 || c.candidates > 1000) {
    throw InputError(fmt::format("--measure-loop-candidates: must be in [1, 1000], got {}", c.candidates));
  }
  if (!(c.ridge > 0.0) || !std::isfinite(c.ridge)) throw InputError(fmt::format("measure loop ridge: must be positive, got {}", c.ridge));
}

namespace {

// Devices whose estimate is within this share of a plan's slowest may bound it once measured.
constexpr double kNearBoundShare = 0.05;

// Which plan a candidate is: its shards, table by table.
std::string plan_signature(const Plan& plan) {
  std::string out;
  for (const auto& table : plan.tables) {
    for (const auto& s : table.shards) out += fmt::format("{}:{}:{}:{};", s.rank, s.col_offset, s.cols, s.rows);
    out += '|';
  }
  return out;
}

struct Candidate {
  Plan plan;
  std::vector<DeviceShards> devices;
  std::vector<std::string> keys;    // per device: its shard set ("" when empty)
  double base_max_ms = 0.0;         // the uncorrected model's plan cost
  std::vector<DeviceCost> estimate; // measured compute where known, else the current model's
  double estimate_max_ms = 0.0;
};

class MeasuredNeuroShardPlanner final : public Planner {
 public:
  MeasuredNeuroShardPlanner(std::shared_ptr<const CostModel> model, const NeuroShardConfig& search,
                            const MeasureLoopConfig& loop, ShardSetMeasurer measure)
      : base_(std::move(model)), search_(search), loop_(loop), measure_(std::move(measure)) {
    validate_neuroshard_config(search_);
    validate_measure_loop_config(loop_);
    if (!base_) throw InputError("neuroshard_measured: needs a cost model (--model)");
    if (!measure_) throw InputError("neuroshard_measured: needs a way to measure shard sets on this machine (a build with LibTorch)");
  }

  std::string_view name() const override { return "neuroshard_measured"; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    State state;
    std::shared_ptr<const CostModel> model = base_;
    // Most of the budget corrects the search; the rest checks the finalists' bounds.
    const int search_budget = std::max(1, loop_.budget * 2 / 3);
    const int per_round = std::max(1, (search_budget + 2) / 3);
    while (true) {
      ++state.rounds;
      add_candidates(neuroshard_candidate_plans(tables, cluster, model, search_, loop_.candidates), tables, state);
      estimate_all(*model, state);
      if (state.used >= search_budget) break;
      std::vector<std::string> picks = bounding_sets(state, std::min(per_round, search_budget - state.used), /*best_only=*/false);
      if (picks.empty()) break;
      measure(picks, state);
      model = corrected(state);
    }
    // Check the finalists: measure the best estimate's bounding sets until it is measured or the budget ends.
    while (state.used < loop_.budget) {
      estimate_all(*model, state);
      std::vector<std::string> picks = bounding_sets(state, loop_.budget - state.used, /*best_only=*/true);
      if (picks.empty()) break;
      measure(picks, state);
      model = corrected(state);
    }
    estimate_all(*model, state);
    return chosen_plan(state);
  }

 private:
  struct State {
    std::vector<Candidate> candidates;
    std::set<std::string> signatures;
    std::map<std::string, std::vector<Table>> pieces_of;   // shard-set key -> its pieces
    std::map<std::string, double> measured;                // key -> ms
    std::set<std::string> unmeasurable;
    std::vector<CorrectionObservation> observations;
    CostCorrection correction;
    int used = 0;
    int rounds = 0;
  };

  void add_candidates(std::vector<Plan> plans, const std::vector<Table>& tables, State& state) const {
    for (Plan& plan : plans) {
      if (!state.signatures.insert(plan_signature(plan)).second) continue;
      Candidate c;
      c.devices = device_shards(plan, tables);
      for (const auto& device : c.devices) {
        std::string key = device.pieces.empty() ? "" : shard_set_key(device.pieces);
        if (!key.empty()) state.pieces_of.emplace(key, device.pieces);
        c.keys.push_back(std::move(key));
      }
      c.base_max_ms = max_total_ms(score_plan(plan, tables, *base_));
      c.plan = std::move(plan);
      state.candidates.push_back(std::move(c));
    }
  }

  // Every candidate's devices: measured compute where known, the model's prediction elsewhere, and the
  // model's all-to-alls given that compute.
  void estimate_all(const CostModel& model, State& state) const {
    for (Candidate& c : state.candidates) {
      std::vector<double> compute = model.predict_compute(compute_sets(c.devices));
      std::vector<int64_t> widths;
      for (std::size_t r = 0; r < c.devices.size(); ++r) {
        widths.push_back(c.devices[r].dim_sum);
        auto it = state.measured.find(c.keys[r]);
        if (it != state.measured.end()) compute[r] = it->second;
      }
      c.estimate = costs_from_compute(model, compute, widths);
      c.estimate_max_ms = max_total_ms(c.estimate);
    }
  }

  // Candidates by estimate, best first (ties: the earlier).
  static std::vector<std::size_t> by_estimate(const State& state) {
    std::vector<std::size_t> order(state.candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return state.candidates[a].estimate_max_ms < state.candidates[b].estimate_max_ms;
    });
    return order;
  }

  // Unmeasured shard sets that may bound a candidate: its devices within kNearBoundShare of its slowest,
  // slowest first; taken round-robin over the candidates by estimate (only the best with best_only).
  std::vector<std::string> bounding_sets(const State& state, int limit, bool best_only) const {
    std::vector<std::vector<std::string>> per_candidate;
    for (std::size_t index : by_estimate(state)) {
      const Candidate& c = state.candidates[index];
      std::vector<std::size_t> ranks(c.devices.size());
      for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = r;
      std::stable_sort(ranks.begin(), ranks.end(),
                       [&](std::size_t a, std::size_t b) { return c.estimate[a].total_ms() > c.estimate[b].total_ms(); });
      std::vector<std::string> sets;
      for (std::size_t r : ranks) {
        if (c.estimate[r].total_ms() < (1.0 - kNearBoundShare) * c.estimate_max_ms) break;
        const std::string& key = c.keys[r];
        if (key.empty() || state.measured.count(key) || state.unmeasurable.count(key)) continue;
        sets.push_back(key);
      }
      per_candidate.push_back(std::move(sets));
      if (best_only) break;
    }
    std::vector<std::string> picks;
    std::set<std::string> picked;
    for (std::size_t depth = 0; static_cast<int>(picks.size()) < limit; ++depth) {
      bool any = false;
      for (const auto& sets : per_candidate) {
        if (depth >= sets.size()) continue;
        any = true;
        if (static_cast<int>(picks.size()) < limit && picked.insert(sets[depth]).second) picks.push_back(sets[depth]);
      }
      if (!any) break;
    }
    return picks;
  }

  void measure(const std::vector<std::string>& keys, State& state) const {
    std::vector<std::vector<Table>> sets;
    for (const auto& key : keys) sets.push_back(state.pieces_of.at(key));
    std::vector<std::optional<double>> results = measure_(sets);
    state.used += static_cast<int>(keys.size());
    std::vector<ShardFeatures> features;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (i >= results.size() || !results[i]) {
        state.unmeasurable.insert(keys[i]);
        continue;
      }
      state.measured[keys[i]] = *results[i];
      CorrectionObservation obs;
      for (const auto& piece : sets[i]) obs.shards.push_back(shard_features(piece, piece.dim));
      obs.measured_ms = *results[i];
      const double predicted = base_->predict_compute({obs.shards}).front();
      spdlog::info("measure loop: set of {} shards predicted {:.3f} ms, measured {:.3f} ms ({:+.1f}%)", sets[i].size(),
                   predicted, obs.measured_ms, predicted > 0 ? 100.0 * (obs.measured_ms / predicted - 1.0) : 0.0);
      state.observations.push_back(std::move(obs));
    }
  }

  std::shared_ptr<const CostModel> corrected(State& state) const {
    state.correction = fit_cost_correction(*base_, state.observations, loop_.ridge);
    spdlog::info("measure loop: {} sets measured; compute scaled x{:.3f}, {} tables corrected", state.observations.size(),
                 state.correction.scale, state.correction.table_scale.size());
    return make_corrected_model(base_, state.correction);
  }

  Plan chosen_plan(State& state) const {
    const std::vector<std::size_t> order = by_estimate(state);
    Candidate& best = state.candidates.at(order.front());
    // Its rank by the uncorrected model's prediction: 0 when the loop kept the model's own pick.
    int by_prediction = 0;
    for (const Candidate& c : state.candidates) {
      if (c.base_max_ms < best.base_max_ms) ++by_prediction;
    }
    MeasureLoopSummary summary;
    summary.budget = loop_.budget;
    summary.sets_measured = state.used;
    summary.rounds = state.rounds;
    summary.candidates = static_cast<int>(state.candidates.size());
    summary.chosen = by_prediction;
    summary.compute_scale = state.correction.scale;
    summary.corrected_tables = static_cast<int>(state.correction.table_scale.size());
    summary.estimated_max_ms = best.estimate_max_ms;
    std::vector<double> predicted = base_->predict_compute(compute_sets(best.devices));
    for (std::size_t r = 0; r < best.devices.size(); ++r) {
      auto it = state.measured.find(best.keys[r]);
      if (it != state.measured.end()) summary.devices.push_back({static_cast<int>(r), predicted[r], it->second});
    }
    spdlog::info("measure loop: chose candidate {} of {} by uncorrected prediction; its slowest device {:.3f} ms with "
                 "measured compute ({} of {} devices measured)",
                 by_prediction + 1, summary.candidates, best.estimate_max_ms, summary.devices.size(), best.devices.size());
    Plan plan = std::move(best.plan);
    plan.algorithm = "neuroshard_measured";
    plan.measure_loop = std::move(summary);
    return plan;
  }

  std::shared_ptr<const CostModel> base_;
  NeuroShardConfig search_;
  MeasureLoopConfig loop_;
  ShardSetMeasurer measure_;
};

}  // namespace

std::unique_ptr<Planner> make_measured_neuroshard_planner(std::shared_ptr<const CostModel> model,
                                                          const NeuroShardConfig& search,
                                                          const MeasureLoopConfig& loop, ShardSetMeasurer measure) {
  return std::make_unique<MeasuredNeuroShardPlanner>(std::move(model), search, loop, std::move(measure));
}

}  // namespace shardplan
