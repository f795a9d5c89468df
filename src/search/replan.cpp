#include "shardplan/search/replan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "replan_state.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_moves.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

namespace {

constexpr int kSourceDevices = 4;   // pieces leave only the devices with the most compute
constexpr int kTargetDevices = 16;  // for those with the least: both bound a round's work, as the refinement's

bool same_shape(const TableSharding& old, const Table& table) {
  return old.rows == table.rows && old.dim == table.dim && old.dtype == table.dtype;
}

// Table- and column-wise shards in HBM are what TorchRec's reshard moves; the rest stays as it was.
bool movable(const TableSharding& sharding) {
  return !sharding.cache && (sharding.type == ShardingType::kTableWise || sharding.type == ShardingType::kColumnWise);
}

ReplanPiece make_piece(const Table& table, std::size_t index, const Shard& shard, int home, const CostModel& model,
                       Optimizer optimizer) {
  ReplanPiece p;
  p.table = index;
  p.shard = shard;
  p.home = home;
  p.summary.resize(static_cast<std::size_t>(model.summary_size()));
  const Table as_table = shard_as_table(table, shard);
  model.shard_summary(shard_features(as_table, as_table.dim), p.summary.data());
  p.bytes = shard_memory_bytes(shard.rows, shard.cols, table.dtype, optimizer);
  p.ids = input_ids_per_sample(table, shard);
  return p;
}

// The column pieces a table is split into: `count` near-equal widths, multiples of 4, in column order.
std::vector<Shard> column_pieces(const Table& table, int count) {
  const int quads = table.dim / 4;
  std::vector<Shard> shards;
  int64_t col = 0;
  for (int k = 0; k < count; ++k) {
    const int64_t cols = 4 * (quads / count + (k < quads % count ? 1 : 0));
    shards.push_back(Shard{0, 0, col, table.rows, cols});
    col += cols;
  }
  return shards;
}

class Replanner {
 public:
  Replanner(const Plan& old_plan, const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model,
            const ReplanConfig& config)
      : old_(old_plan), tables_(tables), cluster_(cluster), model_(model), config_(config) {}

  Plan run() {
    check_cluster();
    classify();
    check_host_memory();
    state_.emplace(model_, cluster_, fixed_plan_, fixed_tables_);
    for (const auto& [index, old] : kept_) add_kept(index, *old);
    settle_pins();
    for (std::size_t index : placement_order()) place_new(index);
    make_room_everywhere();
    refuse_over_budget();
    // Scored whole, as the plan will be: a budget of nothing then costs exactly this.
    old_max_ms_ = max_total_ms(score_plan(placement(), tables_, model_));
    // A budget of nothing re-scores the old placement: not even the free moves of new tables' pieces.
    if (config_.move_budget_bytes == 0) return build_plan();
    if (!state_->split_adds_group()) return improved();
    // The first column-wise split adds a group of all-to-alls. Alone it may not pay for it, and with the
    // splits that are free after it, it may: a greedy search sees only the first. So the search runs
    // without weighing the group too, and the plan scored lower is kept.
    const Search start = search_now();
    state_->weigh_groups(false);
    Plan unweighed = improved();
    resume(start);
    Plan weighed = improved();
    const double cost = max_total_ms(score_plan(weighed, tables_, model_));
    return max_total_ms(score_plan(unweighed, tables_, model_)) < cost * (1 - 1e-9) ? unweighed : weighed;
  }

 private:
  void check_cluster() const {
    const Cluster& was = old_.cluster;
    if (was.num_devices != cluster_.num_devices || was.devices_per_host != cluster_.devices_per_host) {
      throw InputError(fmt::format(
          "{}: the old plan is for {} GPUs, {} per host; this plan is for {}, {} per host: replanning keeps the "
          "cluster's devices (plan afresh, without --from, for another cluster)",
          config_.from, was.num_devices, was.devices_per_host, cluster_.num_devices, cluster_.devices_per_host));
    }
  }

  // Kept: the old plan's tables of the same shape (movable or fixed); the others are placed anew.
  void classify() {
    std::unordered_map<std::string, const TableSharding*> old_tables;
    for (const TableSharding& t : old_.tables) old_tables.emplace(t.name, &t);
    fixed_plan_.cluster = cluster_;
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      const auto found = old_tables.find(tables_[i].name);
      if (found == old_tables.end() || !same_shape(*found->second, tables_[i])) {
        placed_.push_back(i);
        continue;
      }
      const TableSharding& old = *found->second;
      if (!config_.sharding_types.allows(old.type)) {
        throw InputError(
            fmt::format("table \"{}\": the old plan has it {}, which the allowed sharding types ({}) "
                        "leave out; replanning keeps a table's type (plan afresh, without --from)",
                        old.name, sharding_type_name(old.type), sharding_types_string(config_.sharding_types)));
      }
      if (old.cache && !cluster_.offers_host_memory()) {
        throw InputError(
            fmt::format("table \"{}\": the old plan keeps it in host memory, and this cluster offers none "
                        "(give --ddr-per-host, or plan afresh without --from)",
                        old.name));
      }
      if (!movable(old)) {
        fixed_plan_.tables.push_back(old);
        fixed_tables_.push_back(tables_[i]);
      }
      kept_.emplace_back(i, &old);
    }
  }

  // Cached tables stay where they are, so their hosts' memory must still hold them (a smaller
  // --ddr-per-host, or an optimizer with more state).
  void check_host_memory() const {
    if (!has_cached_tables(fixed_plan_)) return;
    const std::vector<int64_t> hosts = host_ddr_bytes(fixed_plan_, device_usage(fixed_plan_));
    const auto most = std::max_element(hosts.begin(), hosts.end());
    if (most == hosts.end() || *most <= cluster_.ddr_per_host_bytes) return;
    throw InfeasibleError(fmt::format(
        "host {}: the old plan's cached tables need {} of host memory there, over its {}; a replan "
        "keeps cached tables where they are (offer {} or more per host, or plan afresh)",
        most - hosts.begin(), format_bytes(*most), format_bytes(cluster_.ddr_per_host_bytes), format_bytes(*most)));
  }

  void add_kept(std::size_t index, const TableSharding& old) {
    if (!movable(old)) return;
    for (const Shard& shard : old.shards) {
      pieces_of_[index].push_back(
          state_->add(make_piece(tables_[index], index, shard, shard.rank, model_, cluster_.optimizer)));
    }
  }

  // Pieces whose table is now pinned elsewhere move first, to the best rank it allows (budget counted).
  void settle_pins() {
    for (int i = 0; i < state_->num_pieces(); ++i) {
      const ReplanPiece& p = state_->piece(i);
      const Table& table = tables_[p.table];
      if (table.constraints.allows_rank(p.shard.rank)) continue;
      if (no_room_.empty()) {
        no_room_ =
            fmt::format("table \"{}\" is pinned off rank {}, where the old plan has it", table.name, p.shard.rank);
      }
      if (move_to_best(i)) {
        ++forced_moves_;
        continue;
      }
      const int target = roomiest_rank_for(p);
      if (target < 0) {
        throw InputError(
            fmt::format("table \"{}\": its pinned ranks already hold its other shards, and the old "
                        "plan's {} shards cannot move apart onto them (plan afresh, without --from)",
                        table.name, pieces_of_.at(p.table).size()));
      }
      clear(target, p.bytes - state_->free_bytes(target), no_room_);
      if (!move_to_best(i)) throw InfeasibleError(no_room_ + ", and no move makes room for it");
      ++forced_moves_;
    }
  }

  // The allowed rank, apart from its table's other pieces, with the most free memory; -1: none.
  int roomiest_rank_for(const ReplanPiece& p) const {
    int target = -1;
    for (int r = 0; r < state_->num_devices(); ++r) {
      if (!tables_[p.table].constraints.allows_rank(r) || state_->holds_table(r, p.table)) continue;
      if (target < 0 || state_->free_bytes(r) > state_->free_bytes(target)) target = r;
    }
    return target;
  }

  // Largest first, as a first-fit packing would: the large ones have the fewest places.
  std::vector<std::size_t> placement_order() const {
    std::vector<std::size_t> order = placed_;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return table_memory_bytes(tables_[a], cluster_.optimizer) > table_memory_bytes(tables_[b], cluster_.optimizer);
    });
    return order;
  }

  // Table-wise where it may be and fits a device; else split in 2, 4, ... column pieces.
  void place_new(std::size_t index) {
    const Table& table = tables_[index];
    const ShardingTypeSet types = table_sharding_types(table, config_.sharding_types);
    const bool column = types.allows(ShardingType::kColumnWise);
    if (!types.allows(ShardingType::kTableWise) && !column) {
      throw InputError(fmt::format(
          "table \"{}\": replanning places new and changed tables table- or column-wise, and it may take only {} "
          "(plan afresh, without --from)",
          table.name, sharding_types_string(types)));
    }
    // The fewest pieces whose largest fits a device, one per allowed rank at most.
    int allowed_ranks = 0;
    for (int r = 0; r < cluster_.num_devices; ++r) allowed_ranks += table.constraints.allows_rank(r) ? 1 : 0;
    const int most = std::max(1, std::min(allowed_ranks, table.dim / 4));
    const auto largest = [&](int count) {
      const int quads = table.dim / 4;
      return shard_memory_bytes(table.rows, 4 * ((quads + count - 1) / count), table.dtype, cluster_.optimizer);
    };
    int count = types.allows(ShardingType::kTableWise) ? 1 : std::min(2, most);
    while (column && count < most && largest(count) > cluster_.usable_bytes_per_device()) ++count;
    for (const Shard& shard : column_pieces(table, count)) {
      ReplanPiece p = make_piece(table, index, shard, -1, model_, cluster_.optimizer);
      const int rank = best_rank_for(p);
      p.shard.rank = rank >= 0 ? rank : room_for(p);
      pieces_of_[index].push_back(state_->add(std::move(p)));
    }
  }

  // The rank where piece p (not yet placed) gives the lowest maximum: fitting, allowed, apart from its
  // table's other pieces. Ties: the cheaper device, then the lower rank. -1: none has room.
  int best_rank_for(const ReplanPiece& p) const {
    int best = -1;
    double best_max = 0.0, best_total = 0.0;
    const std::vector<DeviceCost> costs = state_->costs();
    for (int r = 0; r < state_->num_devices(); ++r) {
      if (!fits(p, r)) continue;
      const double max = state_->max_with(p, r);
      const double total = costs[static_cast<std::size_t>(r)].total_ms();
      if (best < 0 || max < best_max || (max == best_max && total < best_total)) {
        best = r;
        best_max = max;
        best_total = total;
      }
    }
    return best;
  }

  bool fits(const ReplanPiece& p, int r) const {
    return tables_[p.table].constraints.allows_rank(r) && !state_->holds_table(r, p.table) &&
           state_->free_bytes(r) >= p.bytes;
  }

  // No device has room for p: clears it on the allowed device with the most free memory.
  int room_for(const ReplanPiece& p) {
    const int target = roomiest_rank_for(p);
    const std::string what =
        fmt::format("table \"{}\" ({}) fits on no device", tables_[p.table].name, format_bytes(p.bytes));
    if (target < 0) throw InfeasibleError(what + " its pins allow");
    clear(target, p.bytes - state_->free_bytes(target), what);
    return target;
  }

  // Devices over their memory (the cluster's shrank) shed pieces until they fit.
  void make_room_everywhere() {
    for (int r = 0; r < state_->num_devices(); ++r) {
      if (state_->free_bytes(r) >= 0) continue;
      clear(r, -state_->free_bytes(r),
            fmt::format("rank {} holds {} more than its usable {}", r, format_bytes(-state_->free_bytes(r)),
                        format_bytes(cluster_.usable_bytes_per_device())));
    }
  }

  // Moves pieces off device r until `needed` more bytes are free there: the smallest piece that frees
  // enough, else the largest, each to the rank that keeps the maximum lowest; a piece no other rank has
  // room for is passed over for the next.
  void clear(int r, int64_t needed, const std::string& what) {
    if (no_room_.empty()) no_room_ = what;
    const int64_t goal = state_->free_bytes(r) + needed;
    while (state_->free_bytes(r) < goal) {
      const int64_t missing = goal - state_->free_bytes(r);
      std::vector<int> order = state_->held(r);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const int64_t x = state_->piece(a).bytes, y = state_->piece(b).bytes;
        if ((x >= missing) != (y >= missing)) return x >= missing;
        return x >= missing ? x < y : x > y;
      });
      const bool moved = std::any_of(order.begin(), order.end(), [&](int i) { return move_to_best(i); });
      if (!moved) throw InfeasibleError(what + ", and no move makes room for it");
      ++forced_moves_;
    }
  }

  // Moves piece i to the allowed rank with room that gives the lowest maximum; false when none has room.
  bool move_to_best(int i) {
    std::optional<PieceChange> best;
    for (int r = 0; r < state_->num_devices(); ++r) {
      PieceChange c{i, -1, r};
      if (!state_->allowed(c, tables_)) continue;
      state_->evaluate(c);
      if (!best || c.max_ms < best->max_ms) best = c;
    }
    if (!best) return false;
    state_->apply(*best);
    return true;
  }

  // What improve() changes, to run it twice from the same start.
  struct Search {
    ReplanState state;
    std::unordered_map<std::size_t, std::vector<int>> pieces_of;
    std::unordered_set<std::size_t> reshaped;
    int chosen_moves = 0;
    bool cut_short = false;
  };
  Search search_now() const { return {*state_, pieces_of_, reshaped_, chosen_moves_, cut_short_}; }
  void resume(const Search& from) {
    state_.emplace(from.state);
    pieces_of_ = from.pieces_of;
    reshaped_ = from.reshaped;
    chosen_moves_ = from.chosen_moves;
    cut_short_ = from.cut_short;
  }

  Plan improved() {
    improve();
    return with_type_changes(build_plan());
  }

  void refuse_over_budget() const {
    if (state_->moved_bytes() <= config_.move_budget_bytes) return;
    throw InfeasibleError(fmt::format(
        "the old placement no longer fits: {}; making room moves {} of the tables' bytes, over the move budget of {}: "
        "a budget of {} ({} bytes) would do",
        no_room_, format_bytes(state_->moved_bytes()), format_bytes(config_.move_budget_bytes),
        format_bytes(state_->moved_bytes()), state_->moved_bytes()));
  }

  // The moves, swaps and column splits, off the devices with the most compute onto those with the least,
  // that lower the maximum most per byte they move, one at a time while the budget lasts.
  void improve() {
    while (chosen_moves_ < config_.max_moves) {
      if (config_.deadline.passed()) {
        cut_short_ = true;
        break;
      }
      std::deque<SplitHalves> halves;
      std::vector<PieceChange> changes = candidate_changes(halves);
      parallel_for(static_cast<int>(changes.size()), config_.threads,
                   [&](int k) { state_->evaluate(changes[static_cast<std::size_t>(k)]); });
      const PieceChange* best = best_per_byte(changes);
      if (best == nullptr) break;
      const std::size_t table = state_->piece(best->i).table;
      const int second = state_->apply(*best);
      if (second >= 0) {
        pieces_of_[table].push_back(second);
        reshaped_.insert(table);
      }
      ++chosen_moves_;
    }
  }

  // Every device's compute: with the all-to-all's wait, every total sits near the maximum while the
  // device with the most compute causes it, so compute orders sources and targets.
  std::vector<int> devices_by_compute() const {
    const std::vector<DeviceCost> costs = state_->costs();
    std::vector<int> order(costs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto& x = costs[static_cast<std::size_t>(a)];
      const auto& y = costs[static_cast<std::size_t>(b)];
      return x.compute_ms != y.compute_ms ? x.compute_ms > y.compute_ms : x.total_ms() > y.total_ms();
    });
    return order;
  }

  std::vector<PieceChange> candidate_changes(std::deque<SplitHalves>& halves) const {
    const std::vector<int> order = devices_by_compute();
    const auto n = static_cast<int>(order.size());
    const std::vector<int> sources(order.begin(), order.begin() + std::min(n, kSourceDevices));
    const std::vector<int> targets(order.rbegin(), order.rbegin() + std::min(n, kTargetDevices));
    std::vector<PieceChange> changes;
    for (int from : sources) {
      for (int i : state_->held(from)) {
        const SplitHalves* split = nullptr;
        if (std::optional<SplitHalves> h = halves_of(i)) {
          halves.push_back(std::move(*h));
          split = &halves.back();
        }
        for (int to : targets) {
          add_if_allowed(PieceChange{i, -1, to}, changes);
          if (split) add_if_allowed(PieceChange{i, -1, to, split}, changes);
          for (int j : state_->held(to)) add_if_allowed(PieceChange{i, j, to}, changes);
          if (!split) continue;
          // A half may pay only once a piece leaves its device, for the device with the least compute.
          const int evict_to = least_busy_but(targets, from, to);
          for (int j : state_->held(to)) add_if_allowed(PieceChange{i, j, to, split, evict_to}, changes);
        }
      }
    }
    return changes;
  }

  static int least_busy_but(const std::vector<int>& by_least_compute, int a, int b) {
    for (int r : by_least_compute)
      if (r != a && r != b) return r;
    return -1;
  }

  // Piece i's column halves (multiples of 4), when its table may be column-wise and it is 8 columns or more
  // (and, keeping shapes, when the piece is a new table's).
  std::optional<SplitHalves> halves_of(int i) const {
    const ReplanPiece& a = state_->piece(i);
    const Table& table = tables_[a.table];
    const bool column = table_sharding_types(table, config_.sharding_types).allows(ShardingType::kColumnWise);
    if (a.shard.cols < 8 || (config_.keep_shapes && a.home >= 0) || !column) {
      return std::nullopt;
    }
    const int64_t quads = a.shard.cols / 4;
    Shard first = a.shard;
    first.cols = 4 * ((quads + 1) / 2);
    Shard second = a.shard;
    second.col_offset = a.shard.col_offset + first.cols;
    second.cols = a.shard.cols - first.cols;
    SplitHalves h{make_piece(table, a.table, first, a.home, model_, cluster_.optimizer),
                  make_piece(table, a.table, second, a.home, model_, cluster_.optimizer)};
    h.first.reshaped = h.second.reshaped = true;
    return h;
  }

  void add_if_allowed(const PieceChange& c, std::vector<PieceChange>& changes) const {
    if (state_->allowed(c, tables_)) changes.push_back(c);
  }

  // The change that lowers the maximum most per byte it adds to the moves, within the budget; one that
  // moves nothing more (a piece back home, a new table's piece) beats any that does. A change that keeps
  // the maximum but relieves one of the devices tied at it gains a little (kTieGain per ms of the top
  // devices' compute), so ties are broken one device at a time. Ties keep the first.
  const PieceChange* best_per_byte(const std::vector<PieceChange>& changes) const {
    constexpr double kTieGain = 0.05;
    constexpr double kNoiseGain = 1e-5;
    const double now = state_->max_total_ms();
    const double top = state_->top_compute_ms();
    const PieceChange* best = nullptr;
    std::pair<bool, double> best_score{false, 0.0};
    for (const PieceChange& c : changes) {
      if (c.max_ms > now * (1 + 1e-12)) continue;
      const double gain = (now - c.max_ms) + kTieGain * (top - c.top_compute_ms);
      // The model sums in float: a gain below its rounding is noise, and moves on noise can cycle until
      // the move limit, never reaching the changes that pay.
      if (gain <= kNoiseGain * now) continue;
      if (state_->moved_bytes() + c.budget_delta > config_.move_budget_bytes) continue;
      const bool free = c.budget_delta <= 0;
      const std::pair<bool, double> score{free, free ? gain : gain / static_cast<double>(c.budget_delta)};
      if (best == nullptr || score > best_score) {
        best = &c;
        best_score = score;
      }
    }
    return best;
  }

  // The placement as it stands: tables in input order, each table's pieces in column order.
  Plan placement() const {
    Plan plan;
    plan.algorithm = kReplanAlgorithm;
    plan.cluster = cluster_;
    std::unordered_map<std::size_t, const TableSharding*> kept;
    for (const auto& [index, old] : kept_) kept.emplace(index, old);
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      const auto old = kept.find(i);
      if (old != kept.end() && !movable(*old->second)) {
        plan.tables.push_back(*old->second);
        continue;
      }
      std::vector<Shard> shards;
      for (int k : pieces_of_.at(i)) shards.push_back(state_->piece(k).shard);
      std::stable_sort(shards.begin(), shards.end(),
                       [](const Shard& a, const Shard& b) { return a.col_offset < b.col_offset; });
      if (old != kept.end() && reshaped_.count(i) == 0) {
        TableSharding sharding = *old->second;  // its type as the old plan states it
        sharding.shards = std::move(shards);
        plan.tables.push_back(std::move(sharding));
      } else {
        plan.tables.push_back(sharding_of(tables_[i], std::move(shards)));
      }
    }
    return plan;
  }

  // Then the search's sharding-type pass (row-wise, table-row-wise, data-parallel where the model predicts a
  // faster slowest device), kept only when what it moves still fits the budget: with fewer conversions
  // until it does. Only over plans of table- and column-wise tables in HBM, the plans it was built for.
  Plan with_type_changes(Plan plan) const {
    if (config_.keep_shapes || !config_.sharding_types.beyond_table_and_column()) return plan;
    const bool plain =
        std::all_of(plan.tables.begin(), plan.tables.end(), [](const TableSharding& t) { return movable(t); });
    if (!plain) return plan;
    const double before = max_total_ms(score_plan(plan, tables_, model_));
    NeuroShardConfig search;
    search.sharding_types = config_.sharding_types;
    search.threads = config_.threads;
    for (int conversions : {64, 16, 4, 1}) {
      if (config_.deadline.passed()) break;
      search.type_moves = conversions;
      Plan typed = neuroshard_type_pass(plan, tables_, model_, search, std::chrono::steady_clock::now());
      PlanMoves changes = plan_moves(old_, typed, cluster_.optimizer);
      if (changes.moved_bytes > config_.move_budget_bytes) continue;
      if (max_total_ms(score_plan(typed, tables_, model_)) >= before * (1 - 1e-9)) break;
      typed.algorithm = kReplanAlgorithm;
      typed.search.reset();
      typed.replan = plan.replan;
      typed.replan->changes = std::move(changes);
      typed.replan->type_pass_moves = conversions;
      return typed;
    }
    return plan;
  }

  Plan build_plan() const {
    Plan plan = placement();
    ReplanSummary summary;
    summary.from = config_.from;
    summary.move_budget_bytes = config_.move_budget_bytes;
    summary.old_max_total_ms = old_max_ms_;
    summary.moves = forced_moves_ + chosen_moves_;
    summary.cut_short = cut_short_;
    summary.changes = plan_moves(old_, plan, cluster_.optimizer);
    if (summary.changes.moved_bytes != state_->moved_bytes()) {
      throw RuntimeFailure(fmt::format("replan: its moves count {} bytes, the plans differ by {}",
                                       state_->moved_bytes(), summary.changes.moved_bytes));
    }
    plan.replan = std::move(summary);
    return plan;
  }

  const Plan& old_;
  const std::vector<Table>& tables_;
  const Cluster& cluster_;
  const CostModel& model_;
  const ReplanConfig& config_;
  std::vector<std::pair<std::size_t, const TableSharding*>> kept_;
  std::vector<std::size_t> placed_;  // new and rebuilt tables
  Plan fixed_plan_;
  std::vector<Table> fixed_tables_;
  std::optional<ReplanState> state_;
  std::unordered_map<std::size_t, std::vector<int>> pieces_of_;  // per table: its pieces
  std::unordered_set<std::size_t> reshaped_;                     // kept tables a split re-cut
  std::string no_room_;
  double old_max_ms_ = 0.0;
  int forced_moves_ = 0;
  int chosen_moves_ = 0;
  bool cut_short_ = false;  // the deadline stopped the moves
};

}  // namespace

int64_t move_budget_from_percent(double percent, const std::vector<Table>& tables, Optimizer optimizer) {
  long double total = 0.0L;
  for (const Table& table : tables) total += static_cast<long double>(table_memory_bytes(table, optimizer));
  const long double bytes = total * static_cast<long double>(percent) / 100.0L;
  return bytes >= static_cast<long double>(std::numeric_limits<int64_t>::max())
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(std::floor(bytes));
}

Plan replan(const Plan& old_plan, const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model,
            const ReplanConfig& config) {
  return Replanner(old_plan, tables, cluster, model, config).run();
}

}  // namespace shardplan
