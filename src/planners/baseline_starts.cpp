#include "baseline_starts.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/planners/baseline_comparison.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

namespace {

// Baselines whose proposals cost far more than the search at scale run only below these many tables x
// devices, or when the search found no plan. TorchRec's all-types proposals: 0.1 s on 856 tables x 128
// GPUs (the search: 1.5 s); torchrec_cw32's column-wise proposals: 1.3 s on 5,000 x 1,024 (the search:
// 1.0 s). The others take milliseconds anywhere.
constexpr int64_t kAllTypesWork = int64_t{1} << 16;
constexpr int64_t kColumnProposalsWork = int64_t{1} << 20;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool uses_only(const Plan& plan, ShardingTypeSet allowed) {
  for (const auto& table : plan.tables) {
    if (!allowed.allows(table.type)) return false;
  }
  return true;
}

bool table_and_column_only(const Plan& plan) { return uses_only(plan, ShardingTypeSet::table_and_column()); }

// The table- and column-wise baseline plans that get the sharding-type pass, best first.
constexpr std::size_t kImprovedStarts = 2;

struct Candidate {
  Plan plan;
  double max_ms = 0.0;
  std::string from;  // the baseline; empty: the search
};

class BaselineCheckedPlanner final : public Planner {
 public:
  BaselineCheckedPlanner(std::unique_ptr<Planner> search, PlannerConfig config)
      : search_(std::move(search)), config_(std::move(config)) {}

  std::string_view name() const override { return search_->name(); }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    const auto start = std::chrono::steady_clock::now();
    const CostModel& model = *config_.cost_model;
    std::optional<Candidate> best;
    std::optional<InfeasibleError> refused;
    std::optional<SearchSummary> own_summary;
    try {
      Plan own = search_->plan(tables, cluster);
      own_summary = own.search;
      const double ms = max_total_ms(score_plan(own, tables, model));
      best = Candidate{std::move(own), ms, {}};
    } catch (const InfeasibleError& e) {
      refused = e;  // a baseline may still plan it (row-wise blocks of a table no GPU holds whole)
    }
    const NeuroShardConfig& search = config_.neuroshard;
    PlannerConfig baseline_config = config_;
    baseline_config.deadline = Deadline::earlier(
        config_.deadline, Deadline::after(search.time_limit_seconds, search.time_limit_start.value_or(start)));
    const double search_ms = best ? best->max_ms : 0.0;
    const int64_t work = static_cast<int64_t>(tables.size()) * cluster.num_devices;
    std::vector<std::string> names;
    for (const std::string& name : baseline_planner_names()) {
      const bool costly = (name == "torchrec_all_types" && work > kAllTypesWork) ||
                          (name == "torchrec_cw32" && work > kColumnProposalsWork);
      if (!costly || !best) names.push_back(name);
    }
    std::vector<BaselineRun> runs =
        run_baselines(names, tables, cluster, baseline_config, model, resolve_threads(search.threads));
    std::vector<Candidate> starts;
    std::vector<BaselineOutcome> outcomes;
    for (BaselineRun& run : runs) {
      outcomes.push_back(run.outcome);
      if (run.plan && uses_only(*run.plan, search.sharding_types) && constraint_violation(*run.plan, tables).empty()) {
        starts.push_back(Candidate{std::move(*run.plan), *run.outcome.max_total_ms, run.outcome.planner});
      }
    }
    improve_the_best(starts, tables, start);
    std::string winner;
    for (Candidate& candidate : starts) {
      if (!best || candidate.max_ms < best->max_ms) {
        winner = candidate.from;
        best = std::move(candidate);
      }
    }
    if (!best) throw *refused;
    if (!winner.empty()) {
      spdlog::debug("neuroshard: {}'s plan scores {:.4f} ms against the search's {}", winner, best->max_ms,
                    refused ? std::string("none") : fmt::format("{:.4f} ms", search_ms));
      best->plan = as_own(std::move(best->plan), winner, search_ms, own_summary);
    }
    if (best->plan.search) best->plan.search->baselines = std::move(outcomes);
    return std::move(best->plan);
  }

 private:
  // The search's sharding-type pass on the kImprovedStarts best table- and column-wise plans (a pass
  // costs about what the search's own does; the others rarely overtake the best).
  void improve_the_best(std::vector<Candidate>& starts, const std::vector<Table>& tables,
                        std::chrono::steady_clock::time_point start) const {
    std::vector<Candidate*> order;
    for (Candidate& c : starts) {
      if (table_and_column_only(c.plan)) order.push_back(&c);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const Candidate* a, const Candidate* b) { return a->max_ms < b->max_ms; });
    if (order.size() > kImprovedStarts) order.resize(kImprovedStarts);
    std::vector<std::string> passed;  // layouts already given the pass: the pass is deterministic
    const std::shared_ptr<TypePassMemo> memo = make_type_pass_memo();  // the passes share their pieces
    for (Candidate* c : order) {
      std::string layout = plan_layout_key(c->plan);
      if (std::find(passed.begin(), passed.end(), layout) != passed.end()) {
        // torchrec and torchrec_cw32 often propose the same plan (no table wider than 32 columns gains
        // from a split): a second pass would repeat the first. It keeps its unimproved cost and so never
        // displaces the first as the winner.
        spdlog::debug("neuroshard: {}'s plan is one already improved", c->from);
        continue;
      }
      passed.push_back(std::move(layout));
      const auto began = std::chrono::steady_clock::now();
      c->plan = neuroshard_type_pass(std::move(c->plan), tables, *config_.cost_model, config_.neuroshard, start, memo);
      const double before = c->max_ms;
      c->max_ms = max_total_ms(score_plan(c->plan, tables, *config_.cost_model));
      spdlog::debug("neuroshard: type pass on {}'s plan {:.4f} -> {:.4f} ms in {:.3f} s", c->from, before, c->max_ms,
                    seconds_since(began));
    }
  }

  // The baseline's plan as this planner's, saying where it started.
  Plan as_own(Plan plan, const std::string& from, double search_ms, std::optional<SearchSummary> own) const {
    plan.algorithm = std::string(search_->name());
    SearchSummary summary = own.value_or(SearchSummary{});
    summary.sharding_types = sharding_types_string(config_.neuroshard.sharding_types);
    summary.time_limit_seconds = config_.neuroshard.time_limit_seconds;
    summary.started_from = from;
    summary.search_max_ms = search_ms;
    plan.search = summary;
    return plan;
  }

  std::unique_ptr<Planner> search_;
  PlannerConfig config_;
};

}  // namespace

std::unique_ptr<Planner> make_baseline_checked_planner(std::unique_ptr<Planner> search, const PlannerConfig& config) {
  if (!config.cost_model) throw InputError("neuroshard: needs a cost model");
  return std::make_unique<BaselineCheckedPlanner>(std::move(search), config);
}

}  // namespace shardplan
