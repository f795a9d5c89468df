// Beam search over column-wise splits (method.md, step 2) around the greedy grid placement (step 1).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "cache_selection.hpp"
#include "grid_placement.hpp"
#include "placement_refinement.hpp"
#include "shard_catalog.hpp"
#include "sharding_type_pass.hpp"
#include "shardplan/core/capacity.hpp"
#include "shardplan/core/deadline.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "shardplan/search/parallel_for.hpp"
#include "split_estimate.hpp"

namespace shardplan {

// Above this many pieces x devices a step cannot afford a placement per child (at 5,000 tables on 1,024
// GPUs one costs milliseconds, and there are a thousand steps): children are ranked by SplitEstimator,
// and only the best 2k are placed, over three grid points around their parent's.
constexpr int64_t kLargeSearchWork = int64_t{1} << 20;

// Devices a large search's refinement moves pieces to (small ones: the 16 cheapest).
constexpr int kLargeRefineTargets = 4;

bool is_large_search(int64_t pieces, int num_devices) { return pieces * num_devices > kLargeSearchWork; }

// Whether `a`, a better placement than `b`, improves on it enough to keep the search going: it fits where
// b did not, places more bytes, or costs at least min_gain of b's less. Smaller gains are kept but do
// not extend the search: on 856 tables over 128 GPUs the last 22 of 56 steps took a third of the time
// for 0.28%.
bool significant_gain(const Placement& a, const Placement& b, double min_gain) {
  return !a.feasible || !b.feasible || a.max_cost <= b.max_cost * (1.0 - min_gain);
}

int auto_split_steps(int num_tables, int num_devices) {
  // Small clusters: the paper's 10. Large ones: about one split per device, since a split can at best
  // move half a table off the slowest device, and never more than there are tables to split.
  return std::max(10, std::min(num_tables, num_devices));
}

void validate_neuroshard_config(const NeuroShardConfig& c) {
  auto bad = [](const char* setting, auto value, const char* rule) {
    throw SettingError(setting, fmt::format("{}, got {}", rule, value));
  };
  if (c.beam_width < 1 || c.beam_width > 1000) bad("beam width", c.beam_width, "must be in [1, 1000]");
  if (c.candidates < 1 || c.candidates > 10000) bad("candidates", c.candidates, "must be in [1, 10000]");
  if (c.steps < 0 || c.steps > 1'000'000) bad("split steps", c.steps, "must be in [0, 1000000] (0: automatic)");
  if (c.patience < 0 || c.patience > 1'000'000)
    bad("patience", c.patience, "must be in [0, 1000000] (0: never stop early)");
  if (!(c.min_gain >= 0.0 && c.min_gain < 1.0)) bad("minimum gain", c.min_gain, "must be a fraction in [0, 1)");
  if (c.grid_points < 1 || c.grid_points > 1000) bad("grid points", c.grid_points, "must be in [1, 1000]");
  if (!(c.grid_min > 0.0) || !std::isfinite(c.grid_min)) bad("grid minimum", c.grid_min, "must be a positive number");
  if (!(c.grid_max >= c.grid_min) || !std::isfinite(c.grid_max))
    bad("grid maximum", c.grid_max, "must be at least the grid minimum");
  if (c.refine_rounds < 0 || c.refine_rounds > 1'000'000)
    bad("refine rounds", c.refine_rounds, "must be in [0, 1000000] (0: none)");
  if (c.threads < 0 || c.threads > 4096) bad("threads", c.threads, "must be in [0, 4096] (0: every core)");
  if (!(c.time_limit_seconds >= 0.0) || !std::isfinite(c.time_limit_seconds)) {
    bad("time limit", c.time_limit_seconds, "must be a number of seconds >= 0 (0: no limit)");
  }
  if (!c.sharding_types.allows(ShardingType::kTableWise)) {
    bad("sharding types", sharding_types_string(c.sharding_types), "must include table_wise");
  }
  if (c.type_moves < 0 || c.type_moves > 1'000'000)
    bad("type moves", c.type_moves, "must be in [0, 1000000] (0: none)");
}

namespace {

// Searches that end sooner print no progress at all: most plans take well under a second.
constexpr double kProgressDelaySeconds = 1.0;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A set of pieces (sorted by table, then column) and its best placement.
struct SplitState {
  std::vector<Piece> pieces;
  uint64_t hash = 0;  // order-free hash of the pieces, to spot one state reached by two paths
  int splits = 0;
  int parent = 0;         // index in the previous beam
  std::size_t split = 0;  // the parent's piece that was halved
  Placement placement;
};

uint64_t piece_hash(const Piece& p) {
  return derive_seed(static_cast<uint64_t>(p.variant), static_cast<uint64_t>(p.col_offset));
}

// The pieces after halving piece i.
std::vector<Piece> split_at(const std::vector<Piece>& pieces, std::size_t i, const ShardCatalog& catalog) {
  std::vector<Piece> out;
  out.reserve(pieces.size() + 1);
  out.insert(out.end(), pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(i));
  const Piece& p = pieces[i];
  const int first = catalog.first_half(p.variant);
  out.push_back(Piece{first, p.col_offset});
  out.push_back(Piece{catalog.second_half(p.variant), p.col_offset + catalog.cols(first)});
  out.insert(out.end(), pieces.begin() + static_cast<std::ptrdiff_t>(i) + 1, pieces.end());
  return out;
}

uint64_t split_hash(uint64_t hash, const Piece& p, const ShardCatalog& catalog) {
  const int first = catalog.first_half(p.variant);
  return hash - piece_hash(p) + piece_hash(Piece{first, p.col_offset}) +
         piece_hash(Piece{catalog.second_half(p.variant), p.col_offset + catalog.cols(first)});
}

// Pieces worth halving in a state: the n largest by memory and the n most expensive alone (the method's
// candidates), plus the n most expensive on the slowest device, since halving one of those is what can
// lower the maximum. Ascending indices.
std::vector<std::size_t> split_candidates(const SplitState& state, const ShardCatalog& catalog, int n) {
  std::vector<std::size_t> splittable;
  for (std::size_t i = 0; i < state.pieces.size(); ++i) {
    if (catalog.splittable(state.pieces[i].variant)) splittable.push_back(i);
  }
  std::vector<char> chosen(state.pieces.size(), 0);
  auto take_top = [&](const std::vector<std::size_t>& among, auto key) {
    std::vector<std::size_t> order = among;
    auto count = std::min(order.size(), static_cast<std::size_t>(n));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                      [&](std::size_t a, std::size_t b) {
                        auto ka = key(state.pieces[a].variant);
                        auto kb = key(state.pieces[b].variant);
                        return ka != kb ? ka > kb : a < b;
                      });
    for (std::size_t k = 0; k < count; ++k) chosen[order[k]] = 1;
  };
  auto by_memory = [&](int v) { return static_cast<double>(catalog.bytes(v)); };
  auto by_cost = [&](int v) { return catalog.alone_cost(v); };
  take_top(splittable, by_memory);
  take_top(splittable, by_cost);
  const Placement& placement = state.placement;
  if (placement.feasible && !placement.devices.empty()) {
    auto slowest =
        std::max_element(placement.devices.begin(), placement.devices.end(),
                         [](const DeviceCost& a, const DeviceCost& b) { return a.total_ms() < b.total_ms(); });
    int rank = static_cast<int>(slowest - placement.devices.begin());
    std::vector<std::size_t> on_slowest;
    for (std::size_t i : splittable) {
      if (placement.ranks[i] == rank) on_slowest.push_back(i);
    }
    take_top(on_slowest, by_cost);
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (chosen[i]) out.push_back(i);
  }
  return out;
}

// Runs place(i) for every child i. Under a deadline, `threads` children at a time, polling it after each
// batch (a batch costs one placement per thread: at 4,096 GPUs, tens of milliseconds against a step's
// few hundred); false when it passed with children left. Without one, all at once, as always.
bool place_each(std::size_t count, int threads, const Deadline& deadline,
                const std::function<void(std::size_t)>& place) {
  const std::size_t batch =
      deadline.set() ? static_cast<std::size_t>(std::max(threads, 1)) : std::max<std::size_t>(count, 1);
  for (std::size_t begin = 0; begin < count; begin += batch) {
    const std::size_t n = std::min(batch, count - begin);
    parallel_for(static_cast<int>(n), threads, [&](int k) { place(begin + static_cast<std::size_t>(k)); });
    if (begin + n < count && deadline.passed()) return false;
  }
  return true;
}

// The sharding-type pass as the search runs it (convert_types, neuroshard_type_pass).
TypePassOptions type_pass_options(const NeuroShardConfig& config, int threads, const Deadline& deadline) {
  TypePassOptions options;
  options.allowed = config.sharding_types;
  options.max_moves = config.type_moves;
  options.threads = threads;
  options.deadline = deadline;
  return options;
}

class NeuroShardPlanner final : public Planner {
 public:
  NeuroShardPlanner(std::shared_ptr<const CostModel> model, const NeuroShardConfig& config)
      : model_(std::move(model)), config_(config) {
    validate_neuroshard_config(config_);
  }

  std::string_view name() const override { return "neuroshard"; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    return std::move(search(tables, cluster, 1).front());
  }

  // The best plan first, then up to max_plans - 1 other distinct ones: the best split states the search
  // met, each placement refined, ordered by predicted cost.
  std::vector<Plan> search(const std::vector<Table>& tables, const Cluster& cluster, int max_plans) const {
    validate_cluster(cluster);
    check_table_constraints(tables, cluster.num_devices, config_.sharding_types);
    check_total_capacity(tables, cluster);
    if (!cluster.offers_host_memory()) return search_once(tables, cluster, max_plans, kCachePackingMargins[0]);
    // Whether the others still pack around the blocks shows only in the search: when they do not, more
    // tables go to host memory, the blocks leaving more room each time.
    for (std::size_t i = 0;; ++i) {
      try {
        return search_once(tables, cluster, max_plans, kCachePackingMargins[i]);
      } catch (const InfeasibleError& e) {
        if (i + 1 == std::size(kCachePackingMargins)) throw;
        spdlog::info(
            "search: {}; again with HBM filled to at most {:.0f}% before the search, host memory taking "
            "the rest",
            e.what(), 100.0 * kCachePackingMargins[i + 1]);
      }
    }
  }

  std::vector<Plan> search_once(const std::vector<Table>& tables, const Cluster& cluster, int max_plans,
                                double packing_margin) const {
    const auto search_start = Clock::now();
    const Deadline deadline =
        Deadline::after(config_.time_limit_seconds, config_.time_limit_start.value_or(search_start));
    const int threads = resolve_threads(config_.threads);
    ShardCatalog catalog(tables, cluster, *model_, threads, config_.sharding_types);
    const RowWiseStart rows = row_wise_start(tables, cluster, catalog, packing_margin);
    refuse_tables_off_the_search(tables, rows.tables, cluster);
    const Cluster& room = rows.search_cluster;  // the memory the row-wise blocks leave the other tables
    GridPlacer placer(catalog, *model_, room, GridOptions{config_.grid_points, config_.grid_min, config_.grid_max});

    const bool may_split = config_.sharding_types.allows(ShardingType::kColumnWise);
    SplitState start;
    start.pieces = fitting_pieces(tables, room, catalog, config_.sharding_types, rows.tables);
    start.splits = static_cast<int>(start.pieces.size()) - (static_cast<int>(tables.size()) - rows.count());
    for (const Piece& p : start.pieces) start.hash += piece_hash(p);
    const auto placing = Clock::now();
    start.placement = placer.place(start.pieces);
    // A step costs at least a placement; past the first, what the last one took. A step the deadline
    // would cut is not started: its estimates and placements would overrun the limit for nothing.
    double step_seconds = seconds_since(placing);

    const int steps = !may_split          ? 0
                      : config_.steps > 0 ? config_.steps
                                          : auto_split_steps(static_cast<int>(tables.size()), cluster.num_devices);
    const bool large = is_large_search(static_cast<int64_t>(start.pieces.size()), cluster.num_devices);
    // The first column-wise split adds TorchRec's column-wise group of collectives to the step (tables too
    // large for a device are split from the start, and the group is there anyway).
    const double split_group_ms = start.splits == 0 ? model_->alltoall_group_ms(cluster.num_devices) : 0.0;
    SplitState best = start;
    std::vector<SplitState> finalists;  // the best distinct states met, best first (only when asked for several)
    if (max_plans > 1) keep_finalist(finalists, start, max_plans);
    // The type pass cannot undo a column-wise split: kept to offer it the tables whole as well.
    const SplitState unsplit = start;
    std::vector<SplitState> beam{std::move(start)};
    int evaluated = 1;
    int last_improvement = 0;
    SearchSummary summary;
    summary.step_budget = steps;
    summary.stopped = "step budget";
    summary.time_limit_seconds = config_.time_limit_seconds;
    summary.sharding_types = sharding_types_string(config_.sharding_types);
    std::optional<Progress> progress;
    for (int step = 1; step <= steps; ++step) {
      if (config_.patience > 0 && step - last_improvement > config_.patience) {
        summary.stopped = "patience";
        if (progress) progress->update(step - 1, fmt::format("stopped: no better plan in {} steps", config_.patience));
        break;
      }
      auto stop_at_deadline = [&] {
        summary.stopped = "time limit";
        summary.cut_short = true;
        if (progress)
          progress->update(step - 1, fmt::format("stopped: the time limit of {} s", config_.time_limit_seconds));
      };
      if (deadline.set() && *deadline.seconds_left() < step_seconds) {
        stop_at_deadline();
        break;
      }
      const auto step_start = Clock::now();
      std::vector<SplitState> children = expand(beam, catalog, large);
      if (children.empty()) {
        summary.stopped = "nothing to split";
        break;
      }
      const std::optional<int> placed =
          large ? score_children_large(children, beam, catalog, placer, room, threads, deadline)
                : score_children(children, beam, placer, threads, deadline);
      if (!placed) {  // the deadline passed before every child was placed: the step is left out whole
        stop_at_deadline();
        break;
      }
      evaluated += *placed;
      for (SplitState& child : children) {
        if (child.splits > 0 && child.placement.feasible) child.placement.max_cost += split_group_ms;
      }
      // Stable: equal scores keep generation order, so the beam does not depend on thread timing.
      std::stable_sort(children.begin(), children.end(), [](const SplitState& a, const SplitState& b) {
        return better_placement(a.placement, b.placement);
      });
      children.resize(std::min(children.size(), static_cast<std::size_t>(config_.beam_width)));
      if (better_placement(children.front().placement, best.placement)) {
        if (significant_gain(children.front().placement, best.placement, config_.min_gain)) last_improvement = step;
        best = children.front();
      }
      if (max_plans > 1) {
        for (const SplitState& child : children) keep_finalist(finalists, child, max_plans);
      }
      spdlog::debug("neuroshard step {}/{}: beam best {:.4f} ms, best {:.4f} ms ({} splits)", step, steps,
                    children.front().placement.max_cost, best.placement.max_cost, best.splits);
      step_seconds = seconds_since(step_start);
      beam = std::move(children);
      summary.steps = step;
      if (config_.show_progress && !progress && seconds_since(search_start) >= kProgressDelaySeconds) {
        progress.emplace("search: split steps", steps, step);
      }
      if (progress) {
        progress->update(step, fmt::format("best {:.2f} ms, {} splits", best.placement.max_cost, best.splits));
      }
    }
    if (progress) progress->finish();
    // The steps tried three grid points each; the chosen pieces get the whole grid once, when there is
    // time: at 4,096 GPUs it costs about two steps.
    const bool time_for_full_grid = !deadline.set() || *deadline.seconds_left() >= 2.0 * step_seconds;
    if (large && summary.steps > 0 && time_for_full_grid) {
      Placement full = placer.place(best.pieces);
      if (better_placement(full, best.placement)) best.placement = std::move(full);
    }
    const bool show_refinement = config_.show_progress && seconds_since(search_start) >= kProgressDelaySeconds;
    RefineStats refined = refine(best, catalog, room, deadline, show_refinement, large, threads);
    summary.splits = best.splits;
    summary.refine_rounds = refined.rounds;
    summary.cut_short = summary.cut_short || refined.cut_short;
    if (!best.placement.feasible) {
      throw InfeasibleError(fmt::format(
          "neuroshard: no placement found: {} of the tables' memory found no device even after {} column-wise "
          "splits (each device offers {}; try more GPUs or more memory per GPU)",
          format_bytes(best.placement.unplaced_bytes), best.splits, format_bytes(room.usable_bytes_per_device())));
    }
    spdlog::debug("neuroshard: {} candidate plans scored, {} column-wise splits, predicted {:.4f} ms", evaluated,
                  best.splits, best.placement.max_cost);
    std::vector<Plan> plans{to_plan(best, tables, cluster, catalog, rows.tables, rows.cache.load_factors)};
    plans.front().search = summary;
    // The other finalists, refined; the best state itself is already first.
    std::vector<SplitState> others;
    for (SplitState& state : finalists) {
      if (same_pieces(state, best) || !state.placement.feasible) continue;
      refine(state, catalog, room, deadline, false, large, threads);
      others.push_back(std::move(state));
    }
    std::stable_sort(others.begin(), others.end(), [](const SplitState& a, const SplitState& b) {
      return better_placement(a.placement, b.placement);
    });
    for (const SplitState& state : others) {
      if (static_cast<int>(plans.size()) >= max_plans) break;
      plans.push_back(to_plan(state, tables, cluster, catalog, rows.tables, rows.cache.load_factors));
    }
    const std::shared_ptr<TypePassMemo> memo = make_type_pass_memo();  // the passes share their pieces
    convert_types(plans, tables, deadline, threads, memo);
    if (!large && best.splits > unsplit.splits) {
      try_unsplit_types(plans, unsplit, tables, cluster, catalog, rows.tables, rows.cache.load_factors, deadline,
                        threads, memo);
    }
    return plans;
  }

 private:
  RefineStats refine(SplitState& state, const ShardCatalog& catalog, const Cluster& cluster, const Deadline& deadline,
                     bool show_progress, bool large, int threads) const {
    RefineStats stats;
    if (!state.placement.feasible || config_.refine_rounds <= 0) return stats;
    const double searched = state.placement.max_cost;
    RefineOptions options;
    options.max_rounds = config_.refine_rounds;
    options.deadline = deadline;
    options.threads = threads;
    // Each change costs D all-to-all predictions: large placements try the 4 cheapest targets, not 16.
    if (large) options.target_devices = kLargeRefineTargets;
    if (show_progress) spdlog::info("search: refining the placement (at most {} moves)", config_.refine_rounds);
    state.placement = refine_placement(state.pieces, state.placement, catalog, *model_,
                                       cluster.usable_bytes_per_device(), options, &stats);
    spdlog::debug("neuroshard: refinement {:.4f} -> {:.4f} ms in {} moves", searched, state.placement.max_cost,
                  stats.rounds);
    return stats;
  }

  // The sharding-type pass over every plan (sharding_type_pass.hpp); the first plan's summary counts it.
  void convert_types(std::vector<Plan>& plans, const std::vector<Table>& tables, const Deadline& deadline, int threads,
                     const std::shared_ptr<TypePassMemo>& memo) const {
    if (!config_.sharding_types.beyond_table_and_column()) return;
    TypePassOptions options = type_pass_options(config_, threads, deadline);
    options.memo = memo;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      TypePassStats stats;
      plans[i] = choose_sharding_types(std::move(plans[i]), tables, *model_, options, &stats);
      if (i == 0 && plans[i].search) {
        plans[i].search->type_moves = stats.moves;
        plans[i].search->converted = stats.converted;
        plans[i].search->cut_short = plans[i].search->cut_short || stats.cut_short;
      }
      if (i == 0)
        spdlog::debug("neuroshard: sharding-type pass: {} moves, {} tables converted", stats.moves, stats.converted);
    }
  }

  // The sharding-type pass on the tables as they were before any split, when that ends faster than the
  // search's plan: a hot table of 60 columns halves into 32 + 28, which the search keeps for its
  // predicted gain, although row-wise blocks of it after no split would have been faster still, and the
  // pass only converts tables on the slowest devices, one at a time. Small searches only: at scale a
  // second pass would add much of the time after the search.
  void try_unsplit_types(std::vector<Plan>& plans, const SplitState& unsplit, const std::vector<Table>& tables,
                         const Cluster& cluster, const ShardCatalog& catalog, const std::vector<char>& row_wise,
                         const std::vector<double>& load_factors, const Deadline& deadline, int threads,
                         const std::shared_ptr<TypePassMemo>& memo) const {
    if (!config_.sharding_types.beyond_table_and_column() || !unsplit.placement.feasible) return;
    // Unrefined: the pass moves shards itself, and a refinement here doubled the planning time on paper-8gpu
    // for 0.4% lower predicted cost.
    std::vector<Plan> alternative{to_plan(unsplit, tables, cluster, catalog, row_wise, load_factors)};
    alternative.front().search = plans.front().search;
    if (alternative.front().search) {
      alternative.front().search->splits = unsplit.splits;
      alternative.front().search->refine_rounds = 0;
    }
    convert_types(alternative, tables, deadline, threads, memo);
    const double chosen_ms = max_total_ms(score_plan(plans.front(), tables, *model_));
    const double alternative_ms = max_total_ms(score_plan(alternative.front(), tables, *model_));
    spdlog::debug("neuroshard: sharding types after no split {:.4f} ms against {:.4f} ms after the splits",
                  alternative_ms, chosen_ms);
    if (!(alternative_ms < chosen_ms)) return;
    plans.front() = std::move(alternative.front());
    // The other finalists may hold the same plan (the unsplit state is one of them).
    const std::string chosen = plan_layout_key(plans.front());
    plans.erase(std::remove_if(plans.begin() + 1, plans.end(),
                               [&](const Plan& other) { return plan_layout_key(other) == chosen; }),
                plans.end());
  }

  static bool same_pieces(const SplitState& a, const SplitState& b) {
    return a.hash == b.hash && std::equal(a.pieces.begin(), a.pieces.end(), b.pieces.begin(), b.pieces.end(),
                                          [](const Piece& x, const Piece& y) {
                                            return x.variant == y.variant && x.col_offset == y.col_offset;
                                          });
  }

  // Keeps the best `limit` distinct split states met so far, best first (ties: the earlier one).
  static void keep_finalist(std::vector<SplitState>& finalists, const SplitState& state, int limit) {
    if (!state.placement.feasible) return;
    for (const SplitState& kept : finalists) {
      if (same_pieces(kept, state)) return;
    }
    auto at = std::upper_bound(finalists.begin(), finalists.end(), state, [](const SplitState& a, const SplitState& b) {
      return better_placement(a.placement, b.placement);
    });
    if (at - finalists.begin() >= limit) return;
    finalists.insert(at, state);
    if (static_cast<int>(finalists.size()) > limit) finalists.pop_back();
  }

  // The search places tables whole, in column slices or (its starts) as row-wise blocks: a table that may
  // take none of them is for the baselines' plans (table-row-wise, data-parallel) and the type pass.
  void refuse_tables_off_the_search(const std::vector<Table>& tables, const std::vector<char>& row_wise,
                                    const Cluster& cluster) const {
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const ShardingTypeSet types = table_sharding_types(tables[t], config_.sharding_types);
      if (!row_wise[t] && (types & ShardingTypeSet::table_and_column()).empty()) {
        // Such a table is planned from a baseline's plan only where one offers its type.
        const bool whole_hosts = !types.allows(ShardingType::kTableRowWise) || cluster.offers_table_row_wise();
        throw InfeasibleError(fmt::format(
            "neuroshard: table \"{}\" may only be {}, and the search places tables whole, in column slices or as "
            "row-wise blocks{}",
            tables[t].name, sharding_types_string(types),
            whole_hosts ? ""
                        : fmt::format("; table_row_wise spans whole hosts, so it needs more than one host and GPUs a "
                                      "multiple of the {} per host (on one host allow row_wise, its equivalent)",
                                      cluster.devices_per_host)));
      }
    }
  }

  // Feasibility first: a table that may be row-wise starts as row-wise blocks (a block on every device,
  // the type that needs the least memory of one) when no device holds it whole or in column slices, or it
  // may be neither; so does one that the blocks then leave no room. The search places the other tables in
  // what the blocks leave; the type pass sees the whole plan.
  static constexpr std::size_t kNamedRowWiseStarts = 5;  // messages name this many, then count the rest

  struct RowWiseStart {
    std::vector<char> tables;  // per table
    Cluster search_cluster;    // the cluster with the blocks' memory taken out
    CacheSelection cache;      // the row-wise starts kept in host memory behind an HBM cache
    int count() const { return static_cast<int>(std::count(tables.begin(), tables.end(), 1)); }
  };

  RowWiseStart row_wise_start(const std::vector<Table>& tables, const Cluster& cluster, const ShardCatalog& catalog,
                              double packing_margin) const {
    RowWiseStart start{std::vector<char>(tables.size(), 0), cluster, {}};
    start.cache.load_factors.assign(tables.size(), 0.0);
    const int64_t usable = cluster.usable_bytes_per_device();
    // Blocks shrink the room, so more tables may need to start as blocks; caching some in host memory
    // frees room again. A few rounds settle it (each only adds starts).
    // With host memory, caching will free what the blocks take: first only the tables no device holds
    // alone start as blocks, so that a small table is not pushed into blocks by a big one's fused blocks.
    int64_t blocks = add_row_wise_starts(tables, cluster, catalog, start, cluster.offers_host_memory());
    for (int round = 0; round < kCacheRounds && cluster.offers_host_memory(); ++round) {
      choose_cached_tables(tables, cluster, config_.sharding_types, *model_, packing_margin, start.tables, start.cache);
      const int before = start.count();
      blocks = add_row_wise_starts(tables, cluster, catalog, start);
      if (start.count() == before) break;
    }
    const int count = start.count();
    if (count == 0) return start;
    std::vector<std::string> names;
    for (std::size_t t = 0; t < tables.size() && names.size() < kNamedRowWiseStarts; ++t) {
      if (start.tables[t]) names.push_back(fmt::format("\"{}\"", tables[t].name));
    }
    if (count > static_cast<int>(names.size()))
      names.push_back(fmt::format("{} more", count - static_cast<int>(names.size())));
    if (blocks > usable) {
      throw InfeasibleError(
          fmt::format("neuroshard: the tables that start as row-wise blocks ({}) need {} per device, "
                      "more than a device offers ({})",
                      fmt::join(names, ", "), format_bytes(blocks), format_bytes(usable)));
    }
    spdlog::info(
        "search: {} start as row-wise blocks ({} per device): no device holds them whole or in column slices, "
        "or their types leave only that",
        fmt::join(names, ", "), format_bytes(blocks));
    log_cached_tables(tables, start.cache);
    start.search_cluster.memory_per_device_bytes = usable - blocks;
    start.search_cluster.reserve_fraction = 0.0;
    return start;
  }

  static constexpr int kCacheRounds = 4;

  // Marks the tables that must start as row-wise blocks given the blocks already there (`alone`: as if
  // there were none); returns the blocks' HBM per device (a cached table's cache and state).
  int64_t add_row_wise_starts(const std::vector<Table>& tables, const Cluster& cluster, const ShardCatalog& catalog,
                              RowWiseStart& start, bool alone = false) const {
    const int64_t usable = cluster.usable_bytes_per_device();
    auto blocks_now = [&] {
      int64_t blocks = 0;
      for (std::size_t t = 0; t < tables.size(); ++t) {
        if (start.tables[t]) blocks += row_block_hbm_bytes(tables[t], cluster, start.cache.load_factors[t]);
      }
      return blocks;
    };
    int64_t blocks = blocks_now();
    // Until none changes: the blocks shrink the room, so a table that fitted may no longer.
    for (bool changed = cluster.num_devices >= 2; changed && blocks <= usable;) {
      changed = false;
      for (std::size_t t = 0; t < tables.size(); ++t) {
        const Table& table = tables[t];
        const ShardingTypeSet types = table_sharding_types(table, config_.sharding_types);
        const bool whole_or_columns =
            !(types & ShardingTypeSet::table_and_column()).empty() &&
            fits_in_slices(catalog, catalog.whole(static_cast<int>(t)), alone ? usable : usable - blocks);
        if (start.tables[t] || whole_or_columns || !types.allows(ShardingType::kRowWise)) continue;
        start.tables[t] = 1;
        changed = true;
        blocks += row_block_hbm_bytes(table, cluster, 0.0);
      }
    }
    return blocks;
  }

  static void log_cached_tables(const std::vector<Table>& tables, const CacheSelection& cache) {
    std::vector<std::string> cached;
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (cache.load_factors[t] > 0.0)
        cached.push_back(fmt::format("\"{}\" (load factor {:.3g})", tables[t].name, cache.load_factors[t]));
    }
    if (cached.empty()) return;
    spdlog::info(
        "search: {} kept in host memory behind an HBM cache (fused_uvm_caching): HBM alone cannot hold "
        "the tables",
        fmt::join(cached, ", "));
  }

  // Whether v's halvings reach pieces that each fit `usable`: the wider half of each is the one to check.
  static bool fits_in_slices(const ShardCatalog& catalog, int v, int64_t usable) {
    while (catalog.bytes(v) > usable) {
      if (!catalog.splittable(v)) return false;
      v = catalog.first_half(v);
    }
    return true;
  }

  // Every table whole, except those larger than a device: halved until each piece fits.
  static std::vector<Piece> fitting_pieces(const std::vector<Table>& tables, const Cluster& cluster,
                                           const ShardCatalog& catalog, ShardingTypeSet allowed,
                                           const std::vector<char>& row_wise) {
    std::vector<Piece> pieces;
    const int64_t usable = cluster.usable_bytes_per_device();
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (row_wise[t]) continue;
      int v = catalog.whole(static_cast<int>(t));
      if (!table_sharding_types(tables[t], allowed).allows(ShardingType::kColumnWise) && catalog.bytes(v) > usable) {
        throw InfeasibleError(
            fmt::format("table \"{}\" ({} x {}, {}) does not fit a device ({}) whole, and may not "
                        "be column_wise (sharding types {})",
                        tables[t].name, tables[t].rows, tables[t].dim, format_bytes(catalog.bytes(v)),
                        format_bytes(usable), sharding_types_string(table_sharding_types(tables[t], allowed))));
      }
      add_fitting(Piece{v, 0}, tables[t], usable, catalog, pieces);
    }
    return pieces;
  }

  // The piece, or its halves (recursively) where it is larger than a device; in column order.
  static void add_fitting(const Piece& piece, const Table& table, int64_t usable, const ShardCatalog& catalog,
                          std::vector<Piece>& pieces) {
    const int v = piece.variant;
    if (catalog.bytes(v) <= usable) {
      pieces.push_back(piece);
      return;
    }
    if (!catalog.splittable(v)) {
      throw InfeasibleError(fmt::format(
          "table \"{}\" ({} x {}) does not fit a device even split into column pieces of {} columns ({} each, a "
          "device offers {})",
          table.name, table.rows, table.dim, catalog.cols(v), format_bytes(catalog.bytes(v)), format_bytes(usable)));
    }
    const int first = catalog.first_half(v);
    add_fitting(Piece{first, piece.col_offset}, table, usable, catalog, pieces);
    add_fitting(Piece{catalog.second_half(v), piece.col_offset + catalog.cols(first)}, table, usable, catalog, pieces);
  }

  // Scores the children by the greedy grid placement. When there are many, each is first placed at its
  // parent's best grid point only (a split rarely moves the best width cap), and only the most promising
  // 4k get the full grid: the costliest part of a step shrinks by about the grid's size. Returns how
  // many full placements ran.
  std::optional<int> score_children(std::vector<SplitState>& children, const std::vector<SplitState>& beam,
                                    const GridPlacer& placer, int threads, const Deadline& deadline) const {
    const auto shortlist = static_cast<std::size_t>(4 * config_.beam_width);
    if (children.size() > shortlist && config_.grid_points > 1) {
      const bool all = place_each(children.size(), threads, deadline, [&](std::size_t i) {
        auto& child = children[i];
        double s = beam[static_cast<std::size_t>(child.parent)].placement.width_cap_multiplier;
        child.placement = placer.place_at(child.pieces, s > 0.0 ? s : config_.grid_max);
      });
      if (!all) return std::nullopt;
      std::stable_sort(children.begin(), children.end(), [](const SplitState& a, const SplitState& b) {
        return better_placement(a.placement, b.placement);
      });
      children.resize(shortlist);
    }
    const bool all = place_each(children.size(), threads, deadline,
                                [&](std::size_t i) { children[i].placement = placer.place(children[i].pieces); });
    if (!all) return std::nullopt;
    return static_cast<int>(children.size());
  }

  // score_children for large searches: every child ranked by SplitEstimator on its parent, the best 2k
  // placed over three grid points around the parent's.
  std::optional<int> score_children_large(std::vector<SplitState>& children, const std::vector<SplitState>& beam,
                                          const ShardCatalog& catalog, const GridPlacer& placer, const Cluster& cluster,
                                          int threads, const Deadline& deadline) const {
    const auto shortlist = static_cast<std::size_t>(2 * config_.beam_width);
    const bool estimable =
        std::all_of(beam.begin(), beam.end(), [](const SplitState& s) { return s.placement.feasible; });
    if (!estimable) return score_children(children, beam, placer, threads, deadline);
    if (children.size() > shortlist) {
      std::vector<SplitEstimator> estimators;
      estimators.reserve(beam.size());
      for (const SplitState& parent : beam) {
        estimators.emplace_back(parent.pieces, parent.placement, catalog, *model_, cluster.usable_bytes_per_device());
      }
      parallel_for(static_cast<int>(children.size()), threads, [&](int i) {
        auto& child = children[static_cast<std::size_t>(i)];
        child.placement.max_cost = estimators[static_cast<std::size_t>(child.parent)].after_split(child.split);
        child.placement.feasible = std::isfinite(child.placement.max_cost);
      });
      std::stable_sort(children.begin(), children.end(), [](const SplitState& a, const SplitState& b) {
        return better_placement(a.placement, b.placement);
      });
      children.resize(shortlist);
    }
    const bool all = place_each(children.size(), threads, deadline, [&](std::size_t i) {
      auto& child = children[i];
      child.placement =
          placer.place_near(child.pieces, beam[static_cast<std::size_t>(child.parent)].placement.width_cap_multiplier);
    });
    if (!all) return std::nullopt;
    return static_cast<int>(children.size());
  }

  // The beam's children, one split each, without duplicates (one state reached from two parents). Small
  // searches also halve every piece of a candidate's width of its table at once: a table in two equal
  // pieces on two bounding devices gains nothing from halving one of them, so single splits alone leave
  // the beam on that plateau.
  std::vector<SplitState> expand(const std::vector<SplitState>& beam, const ShardCatalog& catalog, bool large) const {
    std::vector<SplitState> children;
    std::unordered_multimap<uint64_t, std::size_t> by_hash;
    auto add_child = [&](const SplitState& parent, int p, std::size_t split, std::vector<Piece> pieces, uint64_t hash,
                         int splits) {
      auto [first, last] = by_hash.equal_range(hash);
      bool seen = std::any_of(first, last, [&](const auto& entry) {
        const auto& other = children[entry.second].pieces;
        return std::equal(other.begin(), other.end(), pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
          return a.variant == b.variant && a.col_offset == b.col_offset;
        });
      });
      if (seen) return;
      by_hash.emplace(hash, children.size());
      children.push_back(SplitState{std::move(pieces), hash, parent.splits + splits, p, split, {}});
    };
    for (std::size_t p = 0; p < beam.size(); ++p) {
      const SplitState& parent = beam[p];
      for (std::size_t i : split_candidates(parent, catalog, config_.candidates)) {
        add_child(parent, static_cast<int>(p), i, split_at(parent.pieces, i, catalog),
                  split_hash(parent.hash, parent.pieces[i], catalog), 1);
        if (large) continue;
        // Every piece of this width of the table, when there are several: split from the last so the
        // earlier indices stay valid.
        std::vector<std::size_t> same;
        for (std::size_t k = 0; k < parent.pieces.size(); ++k) {
          if (parent.pieces[k].variant == parent.pieces[i].variant) same.push_back(k);
        }
        if (same.size() < 2) continue;
        std::vector<Piece> pieces = parent.pieces;
        uint64_t hash = parent.hash;
        for (auto k = same.rbegin(); k != same.rend(); ++k) {
          hash = split_hash(hash, pieces[*k], catalog);
          pieces = split_at(pieces, *k, catalog);
        }
        add_child(parent, static_cast<int>(p), i, std::move(pieces), hash, static_cast<int>(same.size()));
      }
    }
    return children;
  }

  Plan to_plan(const SplitState& state, const std::vector<Table>& tables, const Cluster& cluster,
               const ShardCatalog& catalog, const std::vector<char>& row_wise,
               const std::vector<double>& load_factors) const {
    Plan plan;
    plan.algorithm = "neuroshard";
    plan.cluster = cluster;
    plan.tables.resize(tables.size());
    std::size_t i = 0;
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (row_wise[t]) {
        plan.tables[t] = row_wise_sharding(tables[t], cluster.num_devices);
        if (load_factors[t] > 0.0) plan.tables[t].cache = CacheParams{load_factors[t]};
        continue;
      }
      std::size_t end = i;
      while (end < state.pieces.size() && catalog.table(state.pieces[end].variant) == static_cast<int>(t)) ++end;
      std::vector<Shard> shards;
      for (std::size_t k = i; k < end; ++k) {
        const Piece& p = state.pieces[k];
        shards.push_back(Shard{state.placement.ranks[k], 0, p.col_offset, tables[t].rows, catalog.cols(p.variant)});
      }
      plan.tables[t] = sharding_of(tables[t], std::move(shards));
      i = end;
    }
    return plan;  // scored by the caller, with the same model as every other planner's plans
  }

  std::shared_ptr<const CostModel> model_;
  NeuroShardConfig config_;
};

}  // namespace

std::unique_ptr<Planner> make_neuroshard_planner(std::shared_ptr<const CostModel> model,
                                                 const NeuroShardConfig& config) {
  if (!model) throw InputError("neuroshard: needs a cost model");
  return std::make_unique<NeuroShardPlanner>(std::move(model), config);
}

std::vector<Plan> neuroshard_candidate_plans(const std::vector<Table>& tables, const Cluster& cluster,
                                             std::shared_ptr<const CostModel> model, const NeuroShardConfig& config,
                                             int max_plans) {
  if (!model) throw InputError("neuroshard: needs a cost model");
  if (max_plans < 1) throw InputError(fmt::format("neuroshard: max_plans must be at least 1, got {}", max_plans));
  return NeuroShardPlanner(std::move(model), config).search(tables, cluster, max_plans);
}

Plan neuroshard_type_pass(Plan plan, const std::vector<Table>& tables, const CostModel& model,
                          const NeuroShardConfig& config, std::chrono::steady_clock::time_point start,
                          std::shared_ptr<TypePassMemo> memo) {
  if (!config.sharding_types.beyond_table_and_column()) return plan;
  const Deadline deadline = Deadline::after(config.time_limit_seconds, config.time_limit_start.value_or(start));
  TypePassOptions options = type_pass_options(config, resolve_threads(config.threads), deadline);
  options.memo = std::move(memo);
  return choose_sharding_types(std::move(plan), tables, model, options);
}

}  // namespace shardplan
