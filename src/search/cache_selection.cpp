#include "cache_selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <string>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/core/uvm_cache.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/cost_model/uvm_cache_cost.hpp"

namespace shardplan {

namespace {

// One way to keep a table in host memory: its blocks' cache at a load factor.
struct CacheOption {
  double load_factor = 0.0;
  PieceMemory block;     // per device
  double cost_ms = 0.0;  // per device and step
};

// What the choice counts a cached table's misses as at least, per step: a few of the cache's own kernel
// launches (not part of the predicted cost, which leaves the cache's kernels out).
constexpr double kLeastCacheMs = 0.01;

int64_t block_rows(const Table& table, int devices) { return (table.rows + devices - 1) / devices; }

Table block_piece(const Table& table, int devices) {
  return shard_as_table(table, Shard{0, 0, 0, block_rows(table, devices), table.dim});
}

int64_t fused_block_bytes(const Table& table, const Cluster& cluster) {
  return shard_memory_bytes(block_rows(table, cluster.num_devices), table.dim, table.dtype, cluster.optimizer);
}

// The levels a table's blocks may take, cheapest HBM first: the smallest sound one, then the fixed levels.
std::vector<CacheOption> cache_options(const Table& table, const Cluster& cluster, int64_t batch) {
  const int devices = cluster.num_devices;
  const Table piece = block_piece(table, devices);
  const double smallest = min_load_factor(piece, batch);
  std::vector<double> levels;
  if (valid_load_factor(smallest)) levels.push_back(smallest);
  for (double level : kCacheLevels) {
    if (level > smallest && valid_load_factor(level)) levels.push_back(level);
  }
  std::vector<CacheOption> options;
  for (double level : levels) {
    CacheOption option;
    option.load_factor = level;
    option.block = cached_piece_memory(piece.rows, piece.dim, table.dtype, cluster.optimizer, level);
    option.cost_ms = uvm_cache_cost(piece, level, batch, cluster).total_ms();
    options.push_back(option);
  }
  return options;
}

// What the tables need of HBM as the starts stand: the row-wise blocks per device and the rest in total.
struct HbmNeed {
  long double blocks = 0;  // per device
  long double others = 0;  // all devices together

  bool fits(const Cluster& cluster, double margin) const {
    const long double usable = static_cast<long double>(cluster.usable_bytes_per_device()) * margin;
    return blocks <= usable && blocks * cluster.num_devices + others <= usable * cluster.num_devices;
  }
};

class CacheChooser {
 public:
  CacheChooser(const std::vector<Table>& tables, const Cluster& cluster, ShardingTypeSet allowed,
               const CostModel& model, double margin, std::vector<char>& row_wise, CacheSelection& selection)
      : tables_(tables), cluster_(cluster), margin_(margin), row_wise_(row_wise), selection_(selection) {
    const int64_t batch = cost_model_batch(model);
    options_.resize(tables.size());
    chosen_.assign(tables.size(), -1);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const ShardingTypeSet types = table_sharding_types(tables[t], allowed);
      if (!types.allows(ShardingType::kRowWise) || tables[t].constraints.pinned()) continue;
      options_[t] = cache_options(tables[t], cluster, batch);
      for (std::size_t k = 0; k < options_[t].size(); ++k) {
        if (options_[t][k].load_factor == selection.load_factors[t]) chosen_[t] = static_cast<int>(k);
      }
    }
    for (std::size_t t = 0; t < tables.size(); ++t) add_need(t, +1);
  }

  void choose() {
    while (!need_.fits(cluster_, margin_)) {
      if (!cache_cheapest_per_byte()) throw_hbm_shortfall();
    }
    while (raise_a_level()) {
    }
    check_host_memory();
  }

 private:
  // What table t adds to the need as it starts now.
  HbmNeed contribution(std::size_t t) const {
    if (chosen_[t] >= 0 || row_wise_[t]) return HbmNeed{footprint(t) / cluster_.num_devices, 0};
    return HbmNeed{0, footprint(t)};
  }

  void add_need(std::size_t t, int sign) {
    const HbmNeed c = contribution(t);
    need_.blocks += sign * c.blocks;
    need_.others += sign * c.others;
  }

  // Moves table t to option `k` (-1: back in HBM), keeping the need up to date.
  void choose_option(std::size_t t, int k) {
    add_need(t, -1);
    chosen_[t] = k;
    if (k >= 0) row_wise_[t] = 1;
    add_need(t, +1);
    selection_.load_factors[t] = k >= 0 ? option(t).load_factor : 0.0;
  }

  const CacheOption& option(std::size_t t) const { return options_[t][static_cast<std::size_t>(chosen_[t])]; }

  // HBM a table takes over all devices as it starts now.
  long double footprint(std::size_t t) const {
    if (chosen_[t] >= 0) return static_cast<long double>(option(t).block.hbm) * cluster_.num_devices;
    if (row_wise_[t]) return static_cast<long double>(fused_block_bytes(tables_[t], cluster_)) * cluster_.num_devices;
    return static_cast<long double>(table_memory_bytes(tables_[t], cluster_.optimizer));
  }

  // Caches the table and level that cost least per byte of HBM freed; false when none frees any.
  bool cache_cheapest_per_byte() {
    std::size_t best_table = tables_.size();
    std::size_t best_level = 0;
    long double best_ratio = std::numeric_limits<long double>::infinity();
    long double best_freed = 0;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      if (chosen_[t] >= 0) continue;
      for (std::size_t k = 0; k < options_[t].size(); ++k) {
        const long double freed =
            footprint(t) - static_cast<long double>(options_[t][k].block.hbm) * cluster_.num_devices;
        if (freed <= 0) continue;
        // Each cached table counts at least kLeastCacheMs: misses the model deems free (a histogram that
        // touches few rows per batch) would otherwise cache small tables first, for nothing.
        const long double ratio = std::max(options_[t][k].cost_ms, kLeastCacheMs) / freed;
        if (best_table == tables_.size() || ratio < best_ratio || (ratio == best_ratio && freed > best_freed)) {
          best_ratio = ratio;
          best_freed = freed;
          best_table = t;
          best_level = k;
        }
      }
    }
    if (best_table == tables_.size()) return false;
    choose_option(best_table, static_cast<int>(best_level));
    return true;
  }

  // Raises the cached table whose next level saves the most time per byte of HBM it adds, while the
  // tables still fit; false when none can.
  bool raise_a_level() {
    std::size_t best = tables_.size();
    double best_gain = 0.0;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      if (chosen_[t] < 0 || static_cast<std::size_t>(chosen_[t]) + 1 >= options_[t].size()) continue;
      const CacheOption& now = option(t);
      const CacheOption& next = options_[t][static_cast<std::size_t>(chosen_[t]) + 1];
      const double saved_ms = now.cost_ms - next.cost_ms;
      const double added = static_cast<double>(next.block.hbm - now.block.hbm);
      if (saved_ms <= 0.0 || added <= 0.0) continue;
      HbmNeed raised = need_;
      raised.blocks += added;
      if (raised.fits(cluster_, margin_) && saved_ms / added > best_gain) {
        best_gain = saved_ms / added;
        best = t;
      }
    }
    if (best == tables_.size()) return false;
    choose_option(best, chosen_[best] + 1);
    return true;
  }

  [[noreturn]] void throw_hbm_shortfall() const {
    const HbmNeed& least = need_;
    const long double usable = static_cast<long double>(cluster_.usable_bytes_per_device());
    throw InfeasibleError(fmt::format(
        "even with every table that may be row-wise kept in host memory behind its smallest cache, the tables "
        "need {} of HBM per device as row-wise blocks and {} in all ({} devices offer {} each, of which the "
        "search fills at most {:.0f}%)",
        format_byte_total(least.blocks), format_byte_total(least.blocks * cluster_.num_devices + least.others),
        cluster_.num_devices, format_byte_total(usable), 100.0 * margin_));
  }

  void check_host_memory() const {
    long double per_device = 0;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      if (chosen_[t] >= 0) per_device += static_cast<long double>(option(t).block.ddr);
    }
    const long double per_host = per_device * std::min(cluster_.devices_per_host, cluster_.num_devices);
    if (per_host > static_cast<long double>(cluster_.ddr_per_host_bytes)) {
      throw InfeasibleError(fmt::format(
          "the tables kept in host memory need {} of it per host ({} per device), more than the {} each host "
          "offers: {} short",
          format_byte_total(per_host), format_byte_total(per_device), format_bytes(cluster_.ddr_per_host_bytes),
          format_byte_total(per_host - static_cast<long double>(cluster_.ddr_per_host_bytes))));
    }
  }

  const std::vector<Table>& tables_;
  const Cluster& cluster_;
  double margin_;
  std::vector<char>& row_wise_;
  CacheSelection& selection_;
  std::vector<std::vector<CacheOption>> options_;  // per table; empty: it may not be cached
  std::vector<int> chosen_;                        // per table: its option; -1: in HBM
  HbmNeed need_;                                   // what the tables need of HBM as they start now
};

}  // namespace

int64_t row_block_hbm_bytes(const Table& table, const Cluster& cluster, double load_factor) {
  if (load_factor <= 0.0) return fused_block_bytes(table, cluster);
  return cached_piece_memory(block_rows(table, cluster.num_devices), table.dim, table.dtype, cluster.optimizer,
                             load_factor)
      .hbm;
}

void choose_cached_tables(const std::vector<Table>& tables, const Cluster& cluster, ShardingTypeSet allowed,
                          const CostModel& model, double packing_margin, std::vector<char>& row_wise,
                          CacheSelection& selection) {
  if (selection.load_factors.size() != tables.size()) selection.load_factors.assign(tables.size(), 0.0);
  if (!cluster.offers_host_memory() || cluster.num_devices < 2) return;
  CacheChooser(tables, cluster, allowed, model, packing_margin, row_wise, selection).choose();
  selection.cached = static_cast<int>(
      std::count_if(selection.load_factors.begin(), selection.load_factors.end(), [](double f) { return f > 0.0; }));
}

}  // namespace shardplan
