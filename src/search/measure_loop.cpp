// Measured-in-the-loop planning: search, measure what bounds the best plans, correct, search again.
#include "shardplan/search/measure_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/cost_correction.hpp"
#include "shardplan/search/neuroshard_planner.hpp"

namespace shardplan {

void validate_measure_loop_config(const MeasureLoopConfig& c) {
  if (c.budget < 1 || c.budget > 100000)
    throw SettingError("measure loop budget", fmt::format("must be in [1, 100000] shard sets, got {}", c.budget));
  if (c.candidates < 1 || c.candidates > 1000)
    throw SettingError("measure loop candidates", fmt::format("must be in [1, 1000], got {}", c.candidates));
  if (!(c.ridge > 0.0) || !std::isfinite(c.ridge))
    throw SettingError("measure loop ridge", fmt::format("must be positive, got {}", c.ridge));
}

namespace {

// Devices whose estimate is within this share of a plan's slowest may bound it once measured.
constexpr double kNearBoundShare = 0.05;
// The error assumed of an unmeasured device before there are measurements to tell (the bundled model's
// test MAPE is 7.5%), and the least assumed after.
constexpr double kPriorLogError = 0.075;
constexpr double kMinLogError = 0.02;

struct Candidate {
  Plan plan;
  std::string source;  // the planner that made it
  std::vector<DeviceShards> devices;
  std::vector<std::string> keys;     // per device: its shard set ("" when empty)
  double base_max_ms = 0.0;          // the uncorrected model's plan cost
  std::vector<DeviceCost> estimate;  // measured compute where known, else the current model's
  double estimate_max_ms = 0.0;
};

class MeasuredNeuroShardPlanner final : public Planner {
 public:
  MeasuredNeuroShardPlanner(std::shared_ptr<const CostModel> model, const NeuroShardConfig& search,
                            const MeasureLoopConfig& loop, ShardSetMeasurer measure,
                            std::vector<std::shared_ptr<const Planner>> rivals)
      : base_(std::move(model)),
        search_(search),
        loop_(loop),
        measure_(std::move(measure)),
        rivals_(std::move(rivals)) {
    validate_neuroshard_config(search_);
    validate_measure_loop_config(loop_);
    if (!base_) throw InputError("neuroshard_measured: needs a cost model");
    if (!measure_)
      throw InputError(
          "neuroshard_measured: needs a way to measure shard sets on this machine (a build with LibTorch)");
  }

  std::string_view name() const override { return "neuroshard_measured"; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    State state;
    std::shared_ptr<const CostModel> model = base_;
    // Half the budget corrects the search, in rounds of a quarter; the rest verifies the finalists.
    const int search_budget = std::max(1, loop_.budget / 2);
    const int per_round = std::max(1, loop_.budget / 4);
    while (true) {
      ++state.rounds;
      add_candidates(neuroshard_candidate_plans(tables, cluster, model, search_, loop_.candidates), tables, state,
                     kSearchPlanSource);
      estimate_all(*model, state);
      if (state.used >= search_budget) break;
      std::vector<std::string> picks =
          bounding_sets(state, std::min(per_round, search_budget - state.used), /*best_only=*/false);
      if (picks.empty()) break;
      measure(picks, state);
      model = corrected(state);
    }
    add_rival_candidates(tables, cluster, state);
    // Verify: measure the rivals' bounding sets, then the search's pick's, then the best estimate's, until
    // they are measured or the budget ends.
    while (state.used < loop_.budget) {
      estimate_all(*model, state);
      // The rivals' first: the search rounds have measured the search's own plans already, and a rival is
      // only ever chosen on its measured bound.
      std::vector<std::string> picks = rival_bounds(state);
      const bool for_rivals = !picks.empty();
      if (picks.empty()) picks = unmeasured_bounds(state.candidates[state.search_pick], state);
      if (picks.empty()) picks = bounding_sets(state, loop_.budget - state.used, /*best_only=*/true);
      if (picks.empty()) break;
      if (static_cast<int>(picks.size()) > loop_.budget - state.used)
        picks.resize(static_cast<std::size_t>(loop_.budget - state.used));
      if (for_rivals) state.rival_sets += static_cast<int>(picks.size());
      measure(picks, state);
      model = corrected(state);
    }
    estimate_all(*model, state);
    return chosen_plan(state);
  }

 private:
  struct State {
    std::vector<Candidate> candidates;
    std::map<std::string, std::size_t> signatures;        // plan -> its index in candidates
    std::size_t search_pick = 0;                          // the latest search's own pick
    std::map<std::string, std::vector<Table>> pieces_of;  // shard-set key -> its pieces
    std::map<std::string, double> measured;               // key -> ms
    std::set<std::string> unmeasurable;
    std::vector<CorrectionObservation> observations;
    CostCorrection correction;
    double log_error = kPriorLogError;  // the corrected model's RMS log error on the measured sets
    int used = 0;
    int rival_sets = 0;  // of `used`, measured for the rivals' bounds
    int rounds = 0;
  };

  // Adds the plans not seen before. The search's first plan (its own pick) becomes state.search_pick.
  void add_candidates(std::vector<Plan> plans, const std::vector<Table>& tables, State& state,
                      const std::string& source) const {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      Plan& plan = plans[i];
      std::string signature = plan_layout_key(plan);
      auto [at, added] = state.signatures.emplace(std::move(signature), state.candidates.size());
      if (i == 0 && source == kSearchPlanSource) state.search_pick = at->second;
      if (!added) continue;
      Candidate c;
      c.source = source;
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

  // Each rival's plan, when it finds one.
  void add_rival_candidates(const std::vector<Table>& tables, const Cluster& cluster, State& state) const {
    for (const auto& rival : rivals_) {
      std::vector<Plan> plans;
      try {
        plans.push_back(rival->plan(tables, cluster));
      } catch (const InfeasibleError& e) {
        spdlog::info("measure loop: rival {} found no plan: {}", rival->name(), e.what());
        continue;
      }
      add_candidates(std::move(plans), tables, state, std::string(rival->name()));
    }
  }

  // The rivals' unmeasured bounding sets, round-robin over the rivals.
  static std::vector<std::string> rival_bounds(const State& state) {
    std::vector<std::vector<std::string>> per_rival;
    for (const Candidate& c : state.candidates) {
      if (c.source != kSearchPlanSource) per_rival.push_back(unmeasured_bounds(c, state));
    }
    return round_robin(per_rival, std::numeric_limits<std::size_t>::max());
  }

  // Every candidate's devices: measured compute where known; elsewhere the model's prediction raised by
  // its typical error on the measured sets (an unmeasured device is as likely to be an under-estimate as
  // the search is to have chosen it for one), and the model's all-to-alls given that compute.
  void estimate_all(const CostModel& model, State& state) const {
    const double margin = std::exp(state.log_error);
    for (Candidate& c : state.candidates) {
      std::vector<double> compute = model.predict_compute(compute_sets(c.devices));
      for (std::size_t r = 0; r < c.devices.size(); ++r) {
        auto it = state.measured.find(c.keys[r]);
        compute[r] = it != state.measured.end() ? it->second : compute[r] * margin;
      }
      c.estimate = plan_costs_from_compute(model, c.plan, c.devices, compute);
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
  // slowest first.
  static std::vector<std::string> unmeasured_bounds(const Candidate& c, const State& state) {
    std::vector<std::size_t> ranks(c.devices.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = r;
    std::stable_sort(ranks.begin(), ranks.end(),
                     [&](std::size_t a, std::size_t b) { return c.estimate[a].total_ms() > c.estimate[b].total_ms(); });
    std::vector<std::string> sets;
    for (std::size_t r : ranks) {
      if (c.estimate[r].total_ms() < (1.0 - kNearBoundShare) * c.estimate_max_ms) break;
      const std::string& key = c.keys[r];
      if (key.empty() || state.measured.count(key) || state.unmeasurable.count(key)) continue;
      if (std::find(sets.begin(), sets.end(), key) == sets.end()) sets.push_back(key);
    }
    return sets;
  }

  // The candidates' unmeasured bounding sets, taken round-robin over the candidates by estimate (only the
  // best with best_only).
  std::vector<std::string> bounding_sets(const State& state, int limit, bool best_only) const {
    std::vector<std::vector<std::string>> per_candidate;
    for (std::size_t index : by_estimate(state)) {
      per_candidate.push_back(unmeasured_bounds(state.candidates[index], state));
      if (best_only) break;
    }
    return round_robin(per_candidate, static_cast<std::size_t>(std::max(0, limit)));
  }

  // Up to `limit` distinct sets, the first of each list, then the second of each, and so on.
  static std::vector<std::string> round_robin(const std::vector<std::vector<std::string>>& lists, std::size_t limit) {
    std::vector<std::string> picks;
    std::set<std::string> picked;
    for (std::size_t depth = 0; picks.size() < limit; ++depth) {
      bool any = false;
      for (const auto& sets : lists) {
        if (depth >= sets.size()) continue;
        any = true;
        if (picks.size() < limit && picked.insert(sets[depth]).second) picks.push_back(sets[depth]);
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
    // Only slower-than-predicted tables are trusted: the search seeks out whatever the model discounts,
    // and a discount fitted to a few noisy sets is what it would find. The machine factor moves every
    // device alike, so it may go either way.
    int raised = 0;
    for (auto& [key, factor] : state.correction.table_scale) {
      factor = std::max(1.0, factor);
      if (factor > 1.0) ++raised;
    }
    auto model = make_corrected_model(base_, state.correction);
    if (!state.observations.empty()) {
      double sum = 0.0;
      for (const auto& obs : state.observations) {
        const double r = std::log(obs.measured_ms / std::max(1e-9, model->predict_compute({obs.shards}).front()));
        sum += r * r;
      }
      state.log_error = std::max(kMinLogError, std::sqrt(sum / static_cast<double>(state.observations.size())));
    }
    spdlog::info(
        "measure loop: {} sets measured; compute scaled x{:.3f}, {} tables slower than predicted; "
        "remaining error {:.1f}%",
        state.observations.size(), state.correction.scale, raised, 100.0 * state.log_error);
    return model;
  }

  // Whether every device that may bound the candidate was measured.
  static bool verified(const Candidate& c, const State& state) {
    for (std::size_t r = 0; r < c.devices.size(); ++r) {
      if (c.estimate[r].total_ms() < (1.0 - kNearBoundShare) * c.estimate_max_ms || c.keys[r].empty()) continue;
      if (!state.measured.count(c.keys[r])) return false;
    }
    return true;
  }

  // The latest search's pick (the corrected model's choice), unless another candidate's bound was
  // measured and its estimate is lower by more than the remaining error: measurements as noisy as the
  // model must not trade a plan the search preferred for one that merely measured lucky.
  Plan chosen_plan(State& state) const {
    std::size_t pick = state.search_pick;
    const double threshold = state.candidates[pick].estimate_max_ms * std::exp(-state.log_error);
    for (std::size_t index : by_estimate(state)) {
      const Candidate& c = state.candidates[index];
      if (index == pick || c.estimate_max_ms >= threshold) break;
      if (verified(c, state)) {
        pick = index;
        break;
      }
    }
    Candidate& best = state.candidates.at(pick);
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
    summary.chosen_from = best.source;
    summary.rival_sets_measured = state.rival_sets;
    summary.compute_scale = state.correction.scale;
    summary.corrected_tables =
        static_cast<int>(std::count_if(state.correction.table_scale.begin(), state.correction.table_scale.end(),
                                       [](const auto& entry) { return entry.second > 1.0; }));
    summary.verified = verified(best, state);
    summary.estimated_max_ms = best.estimate_max_ms;
    std::vector<double> predicted = base_->predict_compute(compute_sets(best.devices));
    for (std::size_t r = 0; r < best.devices.size(); ++r) {
      auto it = state.measured.find(best.keys[r]);
      if (it != state.measured.end()) summary.devices.push_back({static_cast<int>(r), predicted[r], it->second});
    }
    spdlog::info(
        "measure loop: chose {}'s candidate, {} of {} by uncorrected prediction; its slowest device {:.3f} ms "
        "with measured compute ({} of {} devices measured{})",
        best.source, by_prediction + 1, summary.candidates, best.estimate_max_ms, summary.devices.size(),
        best.devices.size(),
        summary.verified ? ", its bound among them" : "; its bound was not measured, the budget ran out");
    Plan plan = std::move(best.plan);
    plan.algorithm = "neuroshard_measured";
    plan.measure_loop = std::move(summary);
    return plan;
  }

  std::shared_ptr<const CostModel> base_;
  NeuroShardConfig search_;
  MeasureLoopConfig loop_;
  ShardSetMeasurer measure_;
  std::vector<std::shared_ptr<const Planner>> rivals_;
};

}  // namespace

std::unique_ptr<Planner> make_measured_neuroshard_planner(std::shared_ptr<const CostModel> model,
                                                          const NeuroShardConfig& search, const MeasureLoopConfig& loop,
                                                          ShardSetMeasurer measure,
                                                          std::vector<std::shared_ptr<const Planner>> rivals) {
  return std::make_unique<MeasuredNeuroShardPlanner>(std::move(model), search, loop, std::move(measure),
                                                     std::move(rivals));
}

}  // namespace shardplan
