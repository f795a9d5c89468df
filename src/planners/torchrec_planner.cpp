// The "torchrec" baselines: what TorchRec's planner would do (torchrec-baseline.md). Its analytic estimate,
// additive over a rank's shards (torchrec_estimates.hpp); per table a set of sharding options; proposals
// of one option per table, each partitioned greedily by performance; the proposal its own estimate rates
// best (the slowest rank's summed perf) wins. Memory follows our cluster model (weights, optimizer state,
// reserve) so every planner is held to the same capacity.
//
// "torchrec" offers table-wise and column-wise options (column-wise with TorchRec's single width rule).
// "torchrec_all_types" adds what TorchRec's EmbeddingBagCollection sharder offers by default: row-wise,
// table-row-wise (across hosts) and data-parallel, with TorchRec's own proposers (greedy by depth, greedy by
// sum, uniform) beside the table- and column-wise proposals. "torchrec_cw32" is "torchrec" with the
// column-wise width users often set (ParameterConstraints(min_partition=32)): TorchRec at its strongest on
// the measured tasks, where the default's 128 columns leave every table whole.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "shardplan/core/capacity.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/planners/planner.hpp"
#include "torchrec_estimates.hpp"
#include "torchrec_planner.hpp"

#include "shardplan/core/sharding_types.hpp"

namespace shardplan {

int torchrec_column_width(int dim, int min_partition) {
  for (int width = min_partition; width < dim; ++width) {
    if (dim % width == 0 && width % 4 == 0) return width;
  }
  return dim;
}

namespace {

// A greedy proposer stops after this many table-or-rank visits of its partitions (each proposal costs
// about tables + GPUs). TorchRec's planner takes an optional timeout instead; a count keeps the plan
// deterministic. A proposer makes 3 or 4 proposals per table, so the cap binds from about 700 tables on
// 128 GPUs.
constexpr int64_t kGreedyProposerWork = int64_t{1} << 21;

// A table-wise or column-wise shard: its columns, memory and estimate; the partition picks its rank.
struct OptionShard {
  Shard shard;
  int64_t bytes = 0;
  double perf_ms = 0.0;
};

struct Option {
  ShardingType type = ShardingType::kTableWise;
  std::vector<OptionShard> shards;  // table-wise and column-wise
  // Row-wise, table-row-wise and data-parallel: a shard on each of `ranks` consecutive ranks from the first
  // of the job (row-wise, data-parallel) or of a host (table-row-wise), each with the same estimate. The
  // first `blocks` hold rows: every one but the last needs `block_bytes`, the last `last_bytes`. Shards
  // without rows (a table of fewer rows than about ranks^2) still carry the estimate, as in TorchRec.
  int ranks = 0;
  int blocks = 0;
  double block_perf_ms = 0.0;
  int64_t block_bytes = 0;
  int64_t last_bytes = 0;
  const TableConstraints* constraints = nullptr;  // the table's (pinned ranks bind its table- and column-wise shards)

  // Row-wise and data-parallel blocks have their ranks; TorchRec places them before everything else.
  bool uniform() const { return type == ShardingType::kRowWise || type == ShardingType::kDataParallel; }
  bool blockwise() const { return blocks > 0; }
  double max_perf() const {
    if (blockwise()) return block_perf_ms;
    double m = 0.0;
    for (const auto& s : shards) m = std::max(m, s.perf_ms);
    return m;
  }
  double sum_perf() const {
    if (blockwise()) return block_perf_ms * ranks;
    double sum = 0.0;
    for (const auto& s : shards) sum += s.perf_ms;
    return sum;
  }
  // What TorchRec's GreedyProposer compares to pick the option to give up next: (max, sum) of shard storage.
  std::pair<int64_t, int64_t> storage() const {
    if (blockwise()) return {std::max(block_bytes, last_bytes), block_bytes * (blocks - 1) + last_bytes};
    int64_t max = 0;
    int64_t sum = 0;
    for (const auto& s : shards) {
      max = std::max(max, s.bytes);
      sum += s.bytes;
    }
    return {max, sum};
  }
};

using Proposal = std::vector<int>;  // per table, the index of its option

// Per table: the ranks of a table-wise or column-wise option's shards, or a table-row-wise table's host.
using Placement = std::vector<std::vector<int>>;

constexpr double kInfeasible = std::numeric_limits<double>::infinity();

// The best proposal so far and its rating (TorchRec's NoopPerfModel: the slowest rank's summed perf);
// kInfeasible while none fits. Proposals are only rated; the winner alone is placed for the plan.
struct Rated {
  Proposal proposal;
  double max_rank_ms = kInfeasible;
};

class TorchRecPlanner final : public Planner {
 public:
  TorchRecPlanner(std::string_view name, bool all_types, int min_partition, ShardingTypeSet allowed, Deadline deadline)
      : name_(name),
        all_types_(all_types),
        min_partition_(min_partition),
        allowed_(allowed),
        deadline_(std::move(deadline)) {}

  std::string_view name() const override { return name_; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    validate_cluster(cluster);
    check_table_constraints(tables, cluster.num_devices, allowed_);
    if (all_types_) {
      check_total_capacity(tables, cluster);  // row-wise blocks can hold a table no GPU holds whole
    } else {
      std::vector<Table> unsplittable;
      for (const auto& table : tables) {
        if (torchrec_column_width(table.dim, min_partition_) == table.dim) unsplittable.push_back(table);
      }
      check_table_wise_capacity(unsplittable, cluster);  // names a table too large for any device
      check_total_capacity(tables, cluster);
    }
    AnalyticCostConfig estimate;
    estimate.devices_per_host = torchrec_local_world_size(cluster.num_devices, cluster.devices_per_host);
    const auto options = enumerate_options(tables, cluster, estimate);

    Rated best = table_and_column_proposals(tables, options, cluster);
    if (all_types_) {
      for (bool use_depth : {true, false}) greedy_proposals(options, cluster, use_depth, best);
      uniform_proposals(options, cluster, best);
    }
    if (best.max_rank_ms == kInfeasible) {
      throw InfeasibleError(
          fmt::format("{}: no proposal fits: a table or {} found no device with room (each offers {}{})", name(),
                      all_types_ ? "shard" : "column-wise shard", format_bytes(cluster.usable_bytes_per_device()),
                      all_types_ ? "" : "; TorchRec would need row-wise sharding here"));
    }
    return to_plan(best, tables, options, cluster);
  }

 private:
  std::string_view name_;  // a literal
  bool all_types_;
  int min_partition_;
  ShardingTypeSet allowed_;  // the plan's sharding types (TorchRec's sharders), before each table's own
  Deadline deadline_;

  // Per table: table-wise first, column-wise second when TorchRec's width rule splits it, then (all types)
  // row-wise, table-row-wise when the GPUs are whole hosts, and data-parallel.
  std::vector<std::vector<Option>> enumerate_options(const std::vector<Table>& tables, const Cluster& cluster,
                                                     const AnalyticCostConfig& estimate) const {
    const int world = cluster.num_devices;
    const int per_host = cluster.devices_per_host;
    std::vector<std::vector<Option>> options(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const Table& table = tables[t];
      auto add_slices = [&](ShardingType type, int width) {
        Option option;
        option.type = type;
        for (int offset = 0; offset < table.dim; offset += width) {
          option.shards.push_back(OptionShard{Shard{-1, 0, offset, table.rows, width},
                                              shard_memory_bytes(table.rows, width, table.dtype, cluster.optimizer),
                                              torchrec_shard_perf_ms(type, table, width, world, estimate)});
        }
        option.constraints = &table.constraints;
        options[t].push_back(std::move(option));
      };
      const ShardingTypeSet own = table_sharding_types(table, allowed_);
      // A table kept column-wise whose width TorchRec does not split: one column-wise slice, as TorchRec's
      // enumerator offers it.
      const bool only_columns = !own.allows(ShardingType::kTableWise) && own.allows(ShardingType::kColumnWise);
      add_slices(ShardingType::kTableWise, table.dim);
      const int width = torchrec_column_width(table.dim, min_partition_);
      if (width < table.dim || only_columns) add_slices(ShardingType::kColumnWise, std::min(width, table.dim));
      if (!all_types_ || world < 2) continue;

      // Row blocks as row_wise_sharding and table_row_wise_sharding lay them out (empty blocks left out).
      auto add_blocks = [&](ShardingType type, int ranks) {
        Option option;
        option.type = type;
        const int64_t rows = (table.rows + ranks - 1) / ranks;
        option.ranks = ranks;
        option.blocks = static_cast<int>((table.rows + rows - 1) / rows);
        option.block_perf_ms = torchrec_shard_perf_ms(type, table, table.dim, world, estimate);
        option.block_bytes = shard_memory_bytes(rows, table.dim, table.dtype, cluster.optimizer);
        option.last_bytes =
            shard_memory_bytes(table.rows - rows * (option.blocks - 1), table.dim, table.dtype, cluster.optimizer);
        options[t].push_back(std::move(option));
      };
      add_blocks(ShardingType::kRowWise, world);
      if (cluster.offers_table_row_wise()) add_blocks(ShardingType::kTableRowWise, per_host);
      Option replicas;
      replicas.type = ShardingType::kDataParallel;
      replicas.ranks = replicas.blocks = world;
      replicas.block_perf_ms = torchrec_shard_perf_ms(ShardingType::kDataParallel, table, table.dim, world, estimate);
      replicas.block_bytes = replicas.last_bytes = replica_memory_bytes(table, cluster.optimizer);
      options[t].push_back(std::move(replicas));
    }
    for (std::size_t t = 0; t < tables.size(); ++t) keep_allowed_options(tables[t], options[t]);
    return options;
  }

  // The options the plan's sharding types and the table's own allow (TorchRec's sharders and its
  // ParameterConstraints.sharding_types).
  void keep_allowed_options(const Table& table, std::vector<Option>& options) const {
    const ShardingTypeSet own = table_sharding_types(table, allowed_);
    options.erase(std::remove_if(options.begin(), options.end(), [&](const Option& o) { return !own.allows(o.type); }),
                  options.end());
    if (options.empty()) {
      throw InfeasibleError(fmt::format("{}: table \"{}\" may only be {}, which this planner does not offer", name(),
                                        table.name, sharding_types_string(own)));
    }
  }

  static int option_of_type(const std::vector<Option>& options, ShardingType type) {
    for (std::size_t i = 0; i < options.size(); ++i) {
      if (options[i].type == type) return static_cast<int>(i);
    }
    return -1;
  }

  void keep_if_better(const Proposal& proposal, const std::vector<std::vector<Option>>& options, const Cluster& cluster,
                      Rated& best) const {
    const double rating = rate(proposal, options, cluster);
    if (rating < best.max_rank_ms) best = Rated{proposal, rating};
  }

  // A proposal's rating; each costs a partition (milliseconds with thousands of tables), so the deadline
  // is polled before each.
  double rate(const Proposal& proposal, const std::vector<std::vector<Option>>& options, const Cluster& cluster) const {
    if (deadline_.passed()) throw DeadlinePassed(fmt::format("{}: the time limit passed before it finished", name()));
    return partition(proposal, options, cluster);
  }

  // Table-wise wherever a table fits whole, column-wise wherever TorchRec allows; then, greedily, each
  // column-capable table switched from the first to column-wise if that rates better.
  Rated table_and_column_proposals(const std::vector<Table>& tables, const std::vector<std::vector<Option>>& options,
                                   const Cluster& cluster) const {
    const int64_t usable = cluster.usable_bytes_per_device();
    Proposal choice(tables.size());
    Proposal all_columns(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const int column = option_of_type(options[t], ShardingType::kColumnWise);
      const bool fits_whole = table_memory_bytes(tables[t], cluster.optimizer) <= usable;
      all_columns[t] = column >= 0 ? column : 0;
      choice[t] = !fits_whole && column >= 0 ? column : 0;
    }
    double current = rate(choice, options, cluster);
    Rated best{all_columns, rate(all_columns, options, cluster)};
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const int column = option_of_type(options[t], ShardingType::kColumnWise);
      if (column < 0 || choice[t] == column) continue;
      choice[t] = column;
      const double trial = rate(choice, options, cluster);
      if (trial < current) {
        current = trial;
      } else {
        choice[t] = 0;
      }
    }
    if (current < best.max_rank_ms) best = Rated{choice, current};
    return best;
  }

  // TorchRec's GreedyProposer: each table's options sorted by their slowest shard (use_depth) or their
  // summed perf; start from every table's first, then repeatedly move the table whose current option
  // needs the most storage to its next one, until every table is at its last or the work budget is spent.
  void greedy_proposals(const std::vector<std::vector<Option>>& options, const Cluster& cluster, bool use_depth,
                        Rated& best) const {
    std::vector<std::vector<int>> order(options.size());
    for (std::size_t t = 0; t < options.size(); ++t) {
      order[t].resize(options[t].size());
      std::iota(order[t].begin(), order[t].end(), 0);
      std::stable_sort(order[t].begin(), order[t].end(), [&](int a, int b) {
        const auto& oa = options[t][static_cast<std::size_t>(a)];
        const auto& ob = options[t][static_cast<std::size_t>(b)];
        return use_depth ? oa.max_perf() < ob.max_perf() : oa.sum_perf() < ob.sum_perf();
      });
    }
    const int64_t work_per_proposal = static_cast<int64_t>(options.size()) + cluster.num_devices;
    const int64_t max_proposals = std::max<int64_t>(1, kGreedyProposerWork / work_per_proposal);
    std::vector<std::size_t> position(options.size(), 0);
    Proposal proposal(options.size());
    for (int64_t proposals = 0; proposals < max_proposals; ++proposals) {
      for (std::size_t t = 0; t < options.size(); ++t) proposal[t] = order[t][position[t]];
      keep_if_better(proposal, options, cluster, best);
      int largest = -1;
      std::pair<int64_t, int64_t> largest_storage{0, 0};
      for (std::size_t t = 0; t < options.size(); ++t) {
        if (position[t] + 1 >= order[t].size()) continue;
        const auto storage = options[t][static_cast<std::size_t>(proposal[t])].storage();
        if (storage > largest_storage) {
          largest = static_cast<int>(t);
          largest_storage = storage;
        }
      }
      if (largest < 0) return;
      position[static_cast<std::size_t>(largest)] += 1;
    }
  }

  // TorchRec's UniformProposer: every table with the same sharding type, for each type every table offers.
  void uniform_proposals(const std::vector<std::vector<Option>>& options, const Cluster& cluster, Rated& best) const {
    for (int type = 0; type < kNumShardingTypes; ++type) {
      Proposal proposal(options.size());
      bool every_table = true;
      for (std::size_t t = 0; t < options.size() && every_table; ++t) {
        proposal[t] = option_of_type(options[t], static_cast<ShardingType>(type));
        every_table = proposal[t] >= 0;
      }
      if (every_table) keep_if_better(proposal, options, cluster, best);
    }
  }

  // TorchRec's GreedyPerfPartitioner, sorting by perf (SortBy.PERF; its default sorts by storage): row-wise
  // and data-parallel blocks on their ranks first; then the costliest shard (or table-row-wise table)
  // first, a shard onto the least-loaded rank where it fits (the lowest rank on ties, where TorchRec
  // spreads ties over hosts), a table-row-wise table onto the least-loaded host where its blocks fit.
  // Returns the slowest rank's summed perf, kInfeasible when a shard finds no room; `placement`, when
  // given, receives where every shard went.
  static double partition(const Proposal& proposal, const std::vector<std::vector<Option>>& options,
                          const Cluster& cluster, Placement* placement = nullptr) {
    if (placement != nullptr) placement->assign(proposal.size(), {});
    const auto devices = static_cast<std::size_t>(cluster.num_devices);
    const int64_t usable = cluster.usable_bytes_per_device();

    // Blocks from rank 0 up, as steps over the ranks: O(1) per table, O(GPUs) in all.
    std::vector<double> load_step(devices + 1, 0.0);
    std::vector<int64_t> used_step(devices + 1, 0);
    struct Item {
      std::size_t table;
      int shard;  // -1: every block of a table-row-wise table
      double perf;
      int64_t bytes;
    };
    std::vector<Item> items;
    for (std::size_t t = 0; t < proposal.size(); ++t) {
      const Option& option = options[t][static_cast<std::size_t>(proposal[t])];
      if (option.uniform()) {
        const auto blocks = static_cast<std::size_t>(option.blocks);
        load_step[0] += option.block_perf_ms;
        load_step[static_cast<std::size_t>(option.ranks)] -= option.block_perf_ms;
        used_step[0] += option.block_bytes;
        used_step[blocks - 1] += option.last_bytes - option.block_bytes;
        used_step[blocks] -= option.last_bytes;
      } else if (option.type == ShardingType::kTableRowWise) {
        items.push_back(Item{t, -1, option.sum_perf(), option.storage().second});
      } else {
        if (placement != nullptr) (*placement)[t].assign(option.shards.size(), -1);
        for (std::size_t i = 0; i < option.shards.size(); ++i) {
          items.push_back(Item{t, static_cast<int>(i), option.shards[i].perf_ms, option.shards[i].bytes});
        }
      }
    }
    std::vector<double> load(devices, 0.0);
    std::vector<int64_t> used(devices, 0);
    double running_load = 0.0;
    int64_t running_used = 0;
    for (std::size_t r = 0; r < devices; ++r) {
      running_load += load_step[r];
      running_used += used_step[r];
      if (running_used > usable) return kInfeasible;
      load[r] = running_load;
      used[r] = running_used;
    }

    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.perf != b.perf ? a.perf > b.perf : a.bytes > b.bytes;
    });
    std::set<std::pair<double, int>> by_load;  // (load, rank): the least loaded first, the lowest rank on ties
    for (std::size_t r = 0; r < devices; ++r) by_load.emplace(load[r], static_cast<int>(r));
    const auto per_host = static_cast<std::size_t>(cluster.devices_per_host);
    std::vector<double> host_load(devices / per_host, 0.0);  // only table-row-wise tables read it (whole hosts)
    for (std::size_t r = 0; r < host_load.size() * per_host; ++r) host_load[r / per_host] += load[r];
    auto place = [&](std::size_t rank, double perf, int64_t bytes) {
      by_load.erase({load[rank], static_cast<int>(rank)});
      load[rank] += perf;
      used[rank] += bytes;
      by_load.emplace(load[rank], static_cast<int>(rank));
      if (rank / per_host < host_load.size()) host_load[rank / per_host] += perf;
    };
    for (const Item& item : items) {
      const Option& option = options[item.table][static_cast<std::size_t>(proposal[item.table])];
      if (item.shard >= 0) {
        const OptionShard& shard = option.shards[static_cast<std::size_t>(item.shard)];
        auto fit = std::find_if(by_load.begin(), by_load.end(), [&](const auto& entry) {
          return used[static_cast<std::size_t>(entry.second)] + shard.bytes <= usable &&
                 option.constraints->allows_rank(entry.second);
        });
        if (fit == by_load.end()) return kInfeasible;
        const int rank = fit->second;
        place(static_cast<std::size_t>(rank), shard.perf_ms, shard.bytes);
        if (placement != nullptr) (*placement)[item.table][static_cast<std::size_t>(item.shard)] = rank;
        continue;
      }
      const int host = least_loaded_host_with_room(option, host_load, used, usable, per_host);
      if (host < 0) return kInfeasible;
      for (int b = 0; b < option.ranks; ++b) {
        const int64_t bytes = b + 1 < option.blocks    ? option.block_bytes
                              : b + 1 == option.blocks ? option.last_bytes
                                                       : 0;
        place(static_cast<std::size_t>(host) * per_host + static_cast<std::size_t>(b), option.block_perf_ms, bytes);
      }
      if (placement != nullptr) (*placement)[item.table] = {host};
    }
    return *std::max_element(load.begin(), load.end());
  }

  // TorchRec's co-host partition: hosts by their summed load (the lowest index on ties), the first whose
  // ranks hold every block.
  static int least_loaded_host_with_room(const Option& option, const std::vector<double>& host_load,
                                         const std::vector<int64_t>& used, int64_t usable, std::size_t per_host) {
    std::vector<char> tried(host_load.size(), 0);
    for (std::size_t attempt = 0; attempt < host_load.size(); ++attempt) {
      std::size_t h = host_load.size();
      for (std::size_t k = 0; k < host_load.size(); ++k) {
        if (!tried[k] && (h == host_load.size() || host_load[k] < host_load[h])) h = k;
      }
      tried[h] = 1;
      bool fits = true;
      for (int b = 0; b < option.blocks && fits; ++b) {
        const int64_t bytes = b + 1 < option.blocks ? option.block_bytes : option.last_bytes;
        fits = used[h * per_host + static_cast<std::size_t>(b)] + bytes <= usable;
      }
      if (fits) return static_cast<int>(h);
    }
    return -1;
  }

  Plan to_plan(const Rated& best, const std::vector<Table>& tables, const std::vector<std::vector<Option>>& options,
               const Cluster& cluster) const {
    Placement placement;
    partition(best.proposal, options, cluster, &placement);
    Plan plan;
    plan.algorithm = std::string(name());
    plan.cluster = cluster;
    plan.tables.reserve(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const Option& option = options[t][static_cast<std::size_t>(best.proposal[t])];
      const auto& ranks = placement[t];
      switch (option.type) {
        case ShardingType::kRowWise:
          plan.tables.push_back(row_wise_sharding(tables[t], cluster.num_devices));
          break;
        case ShardingType::kDataParallel:
          plan.tables.push_back(data_parallel_sharding(tables[t], cluster.num_devices));
          break;
        case ShardingType::kTableRowWise:
          plan.tables.push_back(table_row_wise_sharding(tables[t], ranks.front(), cluster.devices_per_host));
          break;
        case ShardingType::kTableWise:
        case ShardingType::kColumnWise: {
          std::vector<Shard> shards;
          for (std::size_t i = 0; i < option.shards.size(); ++i) {
            Shard shard = option.shards[i].shard;
            shard.rank = ranks[i];
            shards.push_back(shard);
          }
          plan.tables.push_back(sharding_of(tables[t], std::move(shards)));
          break;
        }
      }
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> make_torchrec_planner(bool all_types, Deadline deadline, ShardingTypeSet allowed) {
  return std::make_unique<TorchRecPlanner>(all_types ? "torchrec_all_types" : "torchrec", all_types,
                                           kTorchRecMinPartition, allowed, std::move(deadline));
}

std::unique_ptr<Planner> make_torchrec_cw32_planner(Deadline deadline, ShardingTypeSet allowed) {
  return std::make_unique<TorchRecPlanner>("torchrec_cw32", /*all_types=*/false, 32, allowed, std::move(deadline));
}

}  // namespace shardplan
