#include "baseline_starts.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "shardplan/baseline_comparison.hpp"
#include "shardplan/errors.hpp"
#include "shardplan/neuroshard.hpp"
#include "shardplan/sharding_types.hpp"

namespace shardplan {

namespace {

// At this many tables x devices the search takes its large path (is_large_search); TorchRec's all-types
// proposals cost seconds there (5,000 tables on 1,024 GPUs: 3.5 s against the search's 3), so they run
// only when the search finds no plan.
constexpr int64_t kLargeWork = int64_t{1} << 20;

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
      best = Candidate{std::move(own), ms};
    } catch (const InfeasibleError& e) {
      refused = e;  // a baseline may still plan it (row-wise blocks of a table no GPU holds whole)
    }
    const NeuroShardConfig& search = config_.neuroshard;
    PlannerConfig baseline_config = config_;
    baseline_config.deadline = Deadline::earlier(
        config_.deadline, Deadline::after(search.time_limit_seconds, search.time_limit_start.value_or(start)));
    const bool large = static_cast<int64_t>(tables.size()) * cluster.num_devices > kLargeWork;
    const double search_ms = best ? best->max_ms : 0.0;
    std::vector<Candidate> starts = baseline_plans(tables, cluster, baseline_config, /*with_all_types=*/!large || !best);
    improve_the_best(starts, tables, start);
    std::string winner;
    for (Candidate& candidate : starts) {
      if (!best || candidate.max_ms < best->max_ms) {
        winner = candidate.from;
        best = std::move(candidate);
      }
    }
    if (!best) throw *refused;
    if (winner.empty()) return std::move(best->plan);
    spdlog::debug("neuroshard: {}'s plan scores {:.4f} ms against the search's {}", winner, best->max_ms,
                  refused ? std::string("none") : fmt::format("{:.4f} ms", search_ms));
    return as_own(std::move(best->plan), winner, search_ms, own_summary);
  }

 private:
  // Every baseline's plan that uses only the allowed types, scored, in planner order; a baseline that
  // fails or runs out of time gives none.
  std::vector<Candidate> baseline_plans(const std::vector<Table>& tables, const Cluster& cluster,
                                        const PlannerConfig& config, bool with_all_types) const {
    std::vector<Candidate> plans;
    for (const std::string& name : baseline_planner_names()) {
      if (name == "torchrec_all_types" && !with_all_types) continue;
      if (config.deadline.passed()) break;
      try {
        Plan plan = make_planner(name, config)->plan(tables, cluster);
        if (!uses_only(plan, config_.neuroshard.sharding_types)) continue;
        const double ms = max_total_ms(score_plan(plan, tables, *config_.cost_model));
        plans.push_back(Candidate{std::move(plan), ms, name});
      } catch (const InfeasibleError&) {
      } catch (const DeadlinePassed&) {
      } catch (const InputError& e) {
        spdlog::debug("neuroshard: baseline {} gave no start: {}", name, e.what());
      }
    }
    return plans;
  }

  // The search's sharding-type pass on the kImprovedStarts best table- and column-wise plans (a pass
  // costs about what the search's own does; the others rarely overtake the best).
  void improve_the_best(std::vector<Candidate>& starts, const std::vector<Table>& tables,
                        std::chrono::steady_clock::time_point start) const {
    std::vector<Candidate*> order;
    for (Candidate& c : starts) {
      if (table_and_column_only(c.plan)) order.push_back(&c);
    }
    std::stable_sort(order.begin(), order.end(), [](const Candidate* a, const Candidate* b) { return a->max_ms < b->max_ms; });
    if (order.size() > kImprovedStarts) order.resize(kImprovedStarts);
    for (Candidate* c : order) {
      c->plan = neuroshard_type_pass(std::move(c->plan), tables, *config_.cost_model, config_.neuroshard, start);
      c->max_ms = max_total_ms(score_plan(c->plan, tables, *config_.cost_model));
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
  if (!config.cost_model) throw InputError("neuroshard: needs a cost model (--model)");
  return std::make_unique<BaselineCheckedPlanner>(std::move(search), config);
}

}  // namespace shardplan
