#include "baseline_starts.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "shardplan/baseline_comparison.hpp"
#include "shardplan/errors.hpp"
#include "shardplan/neuroshard.hpp"
#include "shardplan/parallel_for.hpp"
#include "shardplan/sharding_types.hpp"

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
      best = Candidate{std::move(own), ms};
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
    std::vector<Candidate> starts = baseline_plans(names, tables, cluster, baseline_config);
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
  // Each named baseline's plan that uses only the allowed types, scored, in planner order; a baseline that
  // fails or runs out of time gives none. The baselines plan on the search's threads, each into its own
  // slot (deterministic for any thread count); the model scores them one after another.
  std::vector<Candidate> baseline_plans(const std::vector<std::string>& names, const std::vector<Table>& tables,
                                        const Cluster& cluster, const PlannerConfig& config) const {
    std::vector<std::optional<Plan>> planned(names.size());
    parallel_for(static_cast<int>(names.size()), resolve_threads(config_.neuroshard.threads), [&](int i) {
      const auto& name = names[static_cast<std::size_t>(i)];
      if (config.deadline.passed()) return;
      const auto began = std::chrono::steady_clock::now();
      try {
        planned[static_cast<std::size_t>(i)] = make_planner(name, config)->plan(tables, cluster);
      } catch (const InfeasibleError&) {
      } catch (const DeadlinePassed&) {
      } catch (const InputError& e) {
        spdlog::debug("neuroshard: baseline {} gave no start: {}", name, e.what());
      }
      spdlog::debug("neuroshard: baseline {} planned in {:.3f} s", name, seconds_since(began));
    });
    std::vector<Candidate> plans;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!planned[i] || !uses_only(*planned[i], config_.neuroshard.sharding_types)) continue;
      const double ms = max_total_ms(score_plan(*planned[i], tables, *config_.cost_model));
      plans.push_back(Candidate{std::move(*planned[i]), ms, names[i]});
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
      const auto began = std::chrono::steady_clock::now();
      c->plan = neuroshard_type_pass(std::move(c->plan), tables, *config_.cost_model, config_.neuroshard, start);
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
  if (!config.cost_model) throw InputError("neuroshard: needs a cost model (--model)");
  return std::make_unique<BaselineCheckedPlanner>(std::move(search), config);
}

}  // namespace shardplan
