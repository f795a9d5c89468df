#include "sharding_type_pass.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "poll_batch.hpp"
#include "shardplan/core/cluster.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/cost_model/uvm_cache_cost.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A conversion must lower the plan's predicted cost by this fraction: it trades one kernel and collective
// for another on the model's word alone, and a gain within the compute model's typical error (7% to 14%
// MAPE per shard set on held-out data) is a coin toss: on paper-4gpu,
// conversions predicted to gain under 2% measured slower in 5 of 6 tasks, those over 6% faster in 7 of 7
// (docs/sharding-types.md). A shard move only has to lower it.
constexpr double kMinConversionGain = 0.05;
// Above the float sums' rounding, so that no move is taken on noise.
constexpr double kMinMoveGain = 1e-6;
// A shard per GPU (row-wise, data-parallel) stays within what validate accepts on any cluster.
static_assert(static_cast<std::size_t>(kMaxDevices) <= kMaxShardsPerTable);

// A table's shards as the pass sees them: each one's cost-model summary, memory and all-to-all width.
struct Layout {
  TableSharding sharding;
  std::vector<float> summaries;  // shards x summary size
  std::vector<int64_t> bytes;
  std::vector<int64_t> widths;  // 0 for replicas, which send nothing in the all-to-all
  std::vector<double> ids;      // input ids per sample; 0 for replicas, which read their own samples
  int64_t allreduce_bytes = 0;
  // A row-wise table's width: the plan then runs a reduce-scatter and an all-gather.
  int64_t row_wise_dim() const { return sharding.type == ShardingType::kRowWise ? sharding.dim : 0; }
  // A table-row-wise table's width: its host runs the two collectives among its own devices.
  int64_t host_row_wise_dim() const { return sharding.type == ShardingType::kTableRowWise ? sharding.dim : 0; }
};

// A table's layout with one shard on another rank (none when `shard` < 0): a candidate move, scored
// without copying the layout.
struct ShardMove {
  int shard = -1;
  int to = -1;
  int rank_of(const Layout& layout, std::size_t s) const {
    return static_cast<int>(s) == shard ? to : layout.sharding.shards[s].rank;
  }
};

// Per device: the sum of its shards' summaries, its memory, all-to-all width, input ids and shard count.
struct DeviceState {
  std::size_t summary_size = 0;
  std::vector<float> sums;  // devices x summary_size
  std::vector<int64_t> bytes;
  std::vector<int64_t> width;
  std::vector<double> ids;
  std::vector<int> count;

  const float* sum(std::size_t r) const { return sums.data() + r * summary_size; }

  // Adds (sign +1) or removes (-1) a table's shards, the one `move` names (if any) on its rank instead
  // of its own. With `rows`, this state holds only some devices: shard rank r updates row rows[r].
  void shift(const Layout& layout, int sign, const std::vector<int>& rows = {}, const ShardMove& move = {}) {
    for (std::size_t s = 0; s < layout.sharding.shards.size(); ++s) {
      const int rank = move.rank_of(layout, s);
      const auto r = static_cast<std::size_t>(rows.empty() ? rank : rows[static_cast<std::size_t>(rank)]);
      float* into = sums.data() + r * summary_size;
      const float* summary = layout.summaries.data() + s * summary_size;
      for (std::size_t k = 0; k < summary_size; ++k) into[k] += static_cast<float>(sign) * summary[k];
      bytes[r] += sign * layout.bytes[s];
      width[r] += sign * layout.widths[s];
      ids[r] += sign * layout.ids[s];
      count[r] += sign;
      // An emptied device is exactly empty again, whatever the float sums kept.
      if (count[r] == 0) {
        std::fill(into, into + summary_size, 0.0f);
        ids[r] = 0.0;
      }
    }
  }
};

}  // namespace

// Passes over the same tables and cluster lay out many of the same pieces and conversions: each is
// summarised once for all of them.
struct TypePassMemo {
  std::map<std::tuple<const Table*, int64_t, int64_t, bool>, std::vector<float>> summaries;  // (rows, cols, replica)
  std::map<std::tuple<const Table*, ShardingType, int>, Layout> conversions;                 // (type, host)
};

std::shared_ptr<TypePassMemo> make_type_pass_memo() { return std::make_shared<TypePassMemo>(); }

namespace {

class TypePass {
 public:
  TypePass(Plan& plan, const std::vector<Table>& tables, const CostModel& model, const TypePassOptions& options)
      : plan_(plan),
        model_(model),
        options_(options),
        devices_(plan.cluster.num_devices),
        per_host_(std::max(plan.cluster.devices_per_host, 1)),
        summary_size_(static_cast<std::size_t>(model.summary_size())),
        usable_(plan.cluster.usable_bytes_per_device()),
        memo_(options.memo ? options.memo : make_type_pass_memo()) {
    host_row_wise_dims_.assign(static_cast<std::size_t>((devices_ + per_host_ - 1) / per_host_), 0);
    std::unordered_map<std::string, const Table*> by_name;
    for (const auto& table : tables) by_name.emplace(table.name, &table);
    for (const auto& sharding : plan_.tables) tables_.push_back(by_name.at(sharding.name));
    const auto n = static_cast<std::size_t>(devices_);
    state_.summary_size = summary_size_;
    state_.sums.assign(n * summary_size_, 0.0f);
    state_.bytes.assign(n, 0);
    state_.width.assign(n, 0);
    state_.ids.assign(n, 0.0);
    state_.count.assign(n, 0);
    for (std::size_t t = 0; t < plan_.tables.size(); ++t) {
      layouts_.push_back(make_layout(t, plan_.tables[t]));
      add(layouts_.back(), +1);
    }
    compute_.assign(static_cast<std::size_t>(devices_), 0.0);
    for (std::size_t r = 0; r < n; ++r) compute_[r] = device_compute(state_.sum(r), state_.count[r]);
    // Cached tables are row-wise, which the pass never converts or moves: their misses stay put.
    if (has_cached_tables(plan_)) cache_ms_ = devices_cache_ms(device_shards(plan_, tables), plan_.cluster, model_);
  }

  TypePassStats run() {
    TypePassStats stats;
    double current = total_costs(costs_);
    while (stats.moves < options_.max_moves) {
      if (options_.deadline.passed()) {
        stats.cut_short = true;
        break;
      }
      std::vector<Candidate> candidates = candidates_on_bounding();
      std::vector<double> scores(candidates.size(), kInfinity);
      // Those left unscored when the deadline passes keep an infinite score: the best of the others is
      // still taken.
      stats.cut_short = !score_until_deadline(candidates, scores);
      std::size_t best = candidates.size();
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        const bool converts = candidates[i].move.shard < 0;
        const double needed = current * (1.0 - (converts ? kMinConversionGain : kMinMoveGain));
        if (scores[i] < needed && (best == candidates.size() || scores[i] < scores[best])) best = i;
      }
      if (best == candidates.size()) break;
      const Candidate& chosen = candidates[best];
      const bool converted = chosen.move.shard < 0;
      Layout next = *chosen.layout;
      if (!converted) next.sharding.shards[static_cast<std::size_t>(chosen.move.shard)].rank = chosen.move.to;
      spdlog::debug("sharding types: {} \"{}\" -> {}: {:.4f} -> {:.4f} ms",
                    converted ? "converting" : "moving a shard of", next.sharding.name,
                    sharding_type_name(next.sharding.type), current, scores[best]);
      apply(chosen.table, std::move(next));
      current = total_costs(costs_);
      stats.moves += 1;
      if (converted) stats.converted += 1;
      if (stats.cut_short) break;
    }
    for (std::size_t t = 0; t < layouts_.size(); ++t) plan_.tables[t] = layouts_[t].sharding;
    stats.predicted_ms = current;
    return stats;
  }

 private:
  // Table `table` laid out as `layout` (a conversion, kept in the memo), or as now with `move` made.
  struct Candidate {
    std::size_t table = 0;
    const Layout* layout = nullptr;
    ShardMove move;
  };

  // Scores the candidates in order, a batch at a time, polling the deadline after each batch (each
  // candidate costs an all-to-all prediction over every device); false when it passed first.
  bool score_until_deadline(const std::vector<Candidate>& candidates, std::vector<double>& scores) const {
    const std::size_t per_poll = changes_per_poll(static_cast<std::size_t>(devices_), 16);
    for (std::size_t begin = 0; begin < candidates.size(); begin += per_poll) {
      const std::size_t count = std::min(per_poll, candidates.size() - begin);
      parallel_for(static_cast<int>(count), options_.threads, [&](int k) {
        const std::size_t i = begin + static_cast<std::size_t>(k);
        scores[i] = evaluate(candidates[i].table, *candidates[i].layout, candidates[i].move);
      });
      if (options_.deadline.passed()) return begin + count == candidates.size();
    }
    return true;
  }

  // An empty device computes nothing (the model's head over a zero sum need not say 0).
  double device_compute(const float* summary_sum, int count) const {
    return count > 0 ? model_.compute_from_summary(summary_sum) : 0.0;
  }

  Layout make_layout(std::size_t t, TableSharding sharding) const {
    const Table& table = *tables_[t];
    const bool replicated = sharding.type == ShardingType::kDataParallel;
    Layout layout;
    layout.summaries.resize(sharding.shards.size() * summary_size_);
    for (std::size_t s = 0; s < sharding.shards.size(); ++s) {
      const Shard& shard = sharding.shards[s];
      // Row blocks and replicas repeat one geometry, and other passes lay out the same pieces.
      auto [at, fresh] = memo_->summaries.try_emplace(std::make_tuple(&table, shard.rows, shard.cols, replicated));
      if (fresh) {
        at->second.resize(summary_size_);
        const Table piece = replicated ? replica_as_table(table, devices_) : shard_as_table(table, shard);
        model_.shard_summary(shard_features(piece, piece.dim), at->second.data());
      }
      std::copy(at->second.begin(), at->second.end(), layout.summaries.data() + s * summary_size_);
      layout.bytes.push_back(replicated ? replica_memory_bytes(table, plan_.cluster.optimizer)
                                        : shard_memory(sharding, shard, plan_.cluster.optimizer).hbm);
      layout.widths.push_back(replicated ? 0 : shard.cols);
      layout.ids.push_back(replicated ? 0.0 : input_ids_per_sample(table, shard));
    }
    if (replicated) layout.allreduce_bytes = replica_gradient_bytes(table);
    layout.sharding = std::move(sharding);
    return layout;
  }

  void add(const Layout& layout, int sign) {
    state_.shift(layout, sign);
    allreduce_bytes_ += sign * layout.allreduce_bytes;
    row_wise_dim_ += sign * layout.row_wise_dim();
    tables_per_type_[static_cast<std::size_t>(layout.sharding.type)] += sign;
    if (layout.host_row_wise_dim() > 0) host_row_wise_dims_[host_of(layout)] += sign * layout.host_row_wise_dim();
  }

  std::size_t host_of(const Layout& layout) const {
    return static_cast<std::size_t>(layout.sharding.shards.front().rank / per_host_);
  }

  // The largest host's table-row-wise width with table t laid out as `next` instead of `now`.
  int64_t host_row_wise_dim_with(const Layout& now, const Layout& next) const {
    if (now.host_row_wise_dim() == 0 && next.host_row_wise_dim() == 0) return max_host_row_wise_dim_;
    thread_local std::vector<int64_t> dims;
    dims = host_row_wise_dims_;
    if (now.host_row_wise_dim() > 0) dims[host_of(now)] -= now.host_row_wise_dim();
    if (next.host_row_wise_dim() > 0) dims[host_of(next)] += next.host_row_wise_dim();
    return *std::max_element(dims.begin(), dims.end());
  }

  // The types with all-to-alls (DeviceShards::alltoall_groups) among tables counted per type.
  static int alltoall_groups(const std::array<int, kNumShardingTypes>& tables) {
    ShardingTypeSet used;
    for (int k = 0; k < kNumShardingTypes; ++k) {
      if (tables[static_cast<std::size_t>(k)] > 0) used.add(static_cast<ShardingType>(k));
    }
    return (used & ShardingTypeSet::with_alltoalls()).count();
  }

  // The plan's with one table laid out as `next` instead of `now`.
  int alltoall_groups_with(const Layout& now, const Layout& next) const {
    std::array<int, kNumShardingTypes> tables = tables_per_type_;
    --tables[static_cast<std::size_t>(now.sharding.type)];
    ++tables[static_cast<std::size_t>(next.sharding.type)];
    return alltoall_groups(tables);
  }

  double collectives_ms(int64_t allreduce_bytes, int64_t row_wise_dim, int64_t host_row_wise_dim,
                        int alltoall_groups) const {
    return extra_collectives_ms(model_, allreduce_bytes, row_wise_dim, devices_, host_row_wise_dim, per_host_) +
           alltoall_groups_ms(model_, alltoall_groups, devices_);
  }

  // The plan's max total, keeping each device's costs.
  double total_costs(std::vector<DeviceCost>& costs) {
    max_host_row_wise_dim_ = *std::max_element(host_row_wise_dims_.begin(), host_row_wise_dims_.end());
    costs = costs_from_compute(
        model_, compute_, state_.width, state_.ids,
        collectives_ms(allreduce_bytes_, row_wise_dim_, max_host_row_wise_dim_, alltoall_groups(tables_per_type_)),
        cache_ms());
    return max_total_ms(costs);
  }

  // The plan's max total with table t laid out as `next` with `move` made; infinity when a device would
  // overflow. Only the devices the change touches get new sums (the comm model still needs every device's
  // compute and width).
  double evaluate(std::size_t t, const Layout& next, const ShardMove& move) const {
    const Layout& now = layouts_[t];
    thread_local std::vector<double> compute;
    thread_local std::vector<int64_t> width;
    thread_local std::vector<double> ids;
    thread_local DeviceState touched;  // one row per touched device, in order of first touch
    thread_local std::vector<int> slot_of;
    thread_local std::vector<int> ranks;
    compute = compute_;
    width = state_.width;
    ids = state_.ids;
    slot_of.assign(static_cast<std::size_t>(devices_), -1);
    ranks.clear();
    touched.summary_size = summary_size_;
    touched.sums.clear();
    touched.bytes.clear();
    touched.width.clear();
    touched.ids.clear();
    touched.count.clear();
    const ShardMove none;
    for (const auto& [layout, moved] : {std::pair{&now, &none}, std::pair{&next, &move}}) {
      for (std::size_t s = 0; s < layout->sharding.shards.size(); ++s) {
        const int rank = moved->rank_of(*layout, s);
        int& slot = slot_of[static_cast<std::size_t>(rank)];
        if (slot >= 0) continue;
        slot = static_cast<int>(ranks.size());
        ranks.push_back(rank);
        const float* from = state_.sum(static_cast<std::size_t>(rank));
        touched.sums.insert(touched.sums.end(), from, from + summary_size_);
        touched.bytes.push_back(state_.bytes[static_cast<std::size_t>(rank)]);
        touched.width.push_back(0);  // widths and ids change in `width` and `ids`, the copies the comm model reads
        touched.ids.push_back(0.0);
        touched.count.push_back(state_.count[static_cast<std::size_t>(rank)]);
      }
    }
    for (const auto& [layout, sign, moved] : {std::tuple{&now, -1, &none}, std::tuple{&next, +1, &move}}) {
      touched.shift(*layout, sign, slot_of, *moved);
      for (std::size_t s = 0; s < layout->sharding.shards.size(); ++s) {
        const auto rank = static_cast<std::size_t>(moved->rank_of(*layout, s));
        width[rank] += sign * layout->widths[s];
        ids[rank] += sign * layout->ids[s];
      }
    }
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      if (touched.bytes[k] > usable_) return kInfinity;
      compute[static_cast<std::size_t>(ranks[k])] = device_compute(touched.sum(k), touched.count[k]);
    }
    return max_total_from_compute(model_, compute, width, ids,
                                  collectives_ms(allreduce_bytes_ - now.allreduce_bytes + next.allreduce_bytes,
                                                 row_wise_dim_ - now.row_wise_dim() + next.row_wise_dim(),
                                                 host_row_wise_dim_with(now, next), alltoall_groups_with(now, next)),
                                  cache_ms());
  }

  const std::vector<double>* cache_ms() const { return cache_or_none(cache_ms_); }

  void apply(std::size_t t, Layout next) {
    add(layouts_[t], -1);
    add(next, +1);
    std::vector<int> touched;
    for (const auto* layout : {&layouts_[t], &next}) {
      for (const auto& shard : layout->sharding.shards) touched.push_back(shard.rank);
    }
    for (int r : touched) {
      const auto i = static_cast<std::size_t>(r);
      compute_[i] = device_compute(state_.sum(i), state_.count[i]);
    }
    layouts_[t] = std::move(next);
  }

  // What may relieve the slowest device, and the one with the most compute (every device waits for it in
  // the forward all-to-all, so it often bounds the step through the others' totals): each table-wise or
  // column-wise table on them converted to every allowed type, and each of their shards moved to one of
  // the least loaded devices.
  std::vector<Candidate> candidates_on_bounding() {
    auto by_total = [](const DeviceCost& a, const DeviceCost& b) { return a.total_ms() < b.total_ms(); };
    auto by_compute = [](const DeviceCost& a, const DeviceCost& b) { return a.compute_ms < b.compute_ms; };
    std::vector<int> sources{
        static_cast<int>(std::max_element(costs_.begin(), costs_.end(), by_total) - costs_.begin())};
    const auto busiest = static_cast<int>(std::max_element(costs_.begin(), costs_.end(), by_compute) - costs_.begin());
    if (busiest != sources.front()) sources.push_back(busiest);
    std::vector<Candidate> out;
    for (int source : sources) add_candidates_on(source, sources, out);
    return out;
  }

  void add_candidates_on(int source, const std::vector<int>& sources, std::vector<Candidate>& out) {
    std::vector<int> targets;
    for (int r = 0; r < devices_; ++r) {
      if (std::find(sources.begin(), sources.end(), r) == sources.end()) targets.push_back(r);
    }
    std::stable_sort(targets.begin(), targets.end(), [&](int a, int b) {
      return costs_[static_cast<std::size_t>(a)].total_ms() < costs_[static_cast<std::size_t>(b)].total_ms();
    });
    if (static_cast<int>(targets.size()) > options_.relocation_targets)
      targets.resize(static_cast<std::size_t>(options_.relocation_targets));
    const int per_host = plan_.cluster.devices_per_host;
    const int hosts = (devices_ + per_host - 1) / per_host;
    // The host whose slowest device is the fastest: where a table-row-wise table troubles no one.
    int calmest_host = 0;
    std::vector<double> host_max(static_cast<std::size_t>(hosts), 0.0);
    for (int r = 0; r < devices_; ++r) {
      auto& m = host_max[static_cast<std::size_t>(r / per_host)];
      m = std::max(m, costs_[static_cast<std::size_t>(r)].total_ms());
    }
    for (int h = 1; h < hosts; ++h) {
      if (host_max[static_cast<std::size_t>(h)] < host_max[static_cast<std::size_t>(calmest_host)]) calmest_host = h;
    }

    for (std::size_t t = 0; t < layouts_.size(); ++t) {
      const TableSharding& now = layouts_[t].sharding;
      if (now.type != ShardingType::kTableWise && now.type != ShardingType::kColumnWise) continue;
      if (std::none_of(now.shards.begin(), now.shards.end(), [&](const Shard& s) { return s.rank == source; }))
        continue;
      // A table on both sources is converted once, from the first; its shards on each are moved from each.
      const bool offered =
          source != sources.front() &&
          std::any_of(now.shards.begin(), now.shards.end(), [&](const Shard& s) { return s.rank == sources.front(); });
      const Table& table = *tables_[t];
      const ShardingTypeSet types = table_sharding_types(table, options_.allowed);
      if (types.allows(ShardingType::kRowWise) && !offered) {
        // Only with a block on every rank: every rank joins the reduce-scatter, and the layout's widths
        // count the table on the ranks that hold it (device_shards counts it on all).
        const Layout& rows = conversion(t, ShardingType::kRowWise, 0);
        if (rows.sharding.shards.size() == static_cast<std::size_t>(devices_)) out.push_back({t, &rows, {}});
      }
      if (types.allows(ShardingType::kDataParallel) && !offered) {
        out.push_back({t, &conversion(t, ShardingType::kDataParallel, 0), {}});
      }
      // On one host, table-row-wise is row-wise; TorchRec shards it over whole hosts only.
      if (types.allows(ShardingType::kTableRowWise) && plan_.cluster.offers_table_row_wise() && !offered) {
        out.push_back({t, &conversion(t, ShardingType::kTableRowWise, source / per_host), {}});
        if (calmest_host != source / per_host) {
          out.push_back({t, &conversion(t, ShardingType::kTableRowWise, calmest_host), {}});
        }
      }
      for (std::size_t s = 0; s < now.shards.size(); ++s) {
        if (now.shards[s].rank != source) continue;
        for (int target : targets) {
          if (!table.constraints.allows_rank(target)) continue;
          out.push_back({t, &layouts_[t], ShardMove{static_cast<int>(s), target}});
        }
      }
    }
  }

  // Table t converted to `type` (table-row-wise: on `host`): a layout depends on the table and the
  // cluster alone, so each is summarised once for every pass sharing the memo, however many moves offer it.
  const Layout& conversion(std::size_t t, ShardingType type, int host) {
    const Table& table = *tables_[t];
    const auto key = std::make_tuple(&table, type, host);
    auto at = memo_->conversions.find(key);
    if (at != memo_->conversions.end()) return at->second;
    TableSharding sharding = type == ShardingType::kRowWise        ? row_wise_sharding(table, devices_)
                             : type == ShardingType::kDataParallel ? data_parallel_sharding(table, devices_)
                                                                   : table_row_wise_sharding(table, host, per_host_);
    return memo_->conversions.emplace(key, make_layout(t, std::move(sharding))).first->second;
  }

  Plan& plan_;
  const CostModel& model_;
  TypePassOptions options_;
  int devices_;
  int per_host_;
  std::size_t summary_size_;
  int64_t usable_;
  std::vector<const Table*> tables_;  // per plan table
  std::vector<Layout> layouts_;       // per plan table
  DeviceState state_;
  std::vector<double> compute_;
  int64_t allreduce_bytes_ = 0;
  int64_t row_wise_dim_ = 0;
  std::array<int, kNumShardingTypes> tables_per_type_{};  // data-parallel ones included
  std::vector<int64_t> host_row_wise_dims_;               // per host: its table-row-wise tables' summed width
  int64_t max_host_row_wise_dim_ = 0;                     // as of the last total_costs
  std::vector<DeviceCost> costs_;
  std::vector<double> cache_ms_;  // per device: its cached pieces' misses; empty without any
  std::shared_ptr<TypePassMemo> memo_;
};

}  // namespace

Plan choose_sharding_types(Plan plan, const std::vector<Table>& tables, const CostModel& model,
                           const TypePassOptions& options, TypePassStats* stats) {
  TypePassStats local;
  if (plan.cluster.num_devices >= 2 && options.allowed.beyond_table_and_column()) {
    local = TypePass(plan, tables, model, options).run();
  }
  if (stats != nullptr) *stats = local;
  return plan;
}

}  // namespace shardplan
