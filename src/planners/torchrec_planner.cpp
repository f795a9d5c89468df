// The "torchrec" baseline: what TorchRec's planner would do (torchrec-baseline.md). Its analytic
// estimate, additive over a rank's shards; per table the table-wise option and, for tables wide enough,
// the column-wise option with its single width rule; proposals of option choices, each partitioned
// greedily by performance; the proposal its own estimate rates best wins. Memory follows our cluster
// model (weights, optimizer state, reserve) so every planner is held to the same capacity.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "shardplan/errors.hpp"
#include "shardplan/planner.hpp"
#include "shardplan/units.hpp"
#include "torchrec_planner.hpp"

namespace shardplan {

int torchrec_column_width(int dim, int min_partition) {
  for (int width = min_partition; width < dim; ++width) {
    if (dim % width == 0 && width % 4 == 0) return width;
  }
  return dim;
}

namespace {

constexpr int kMinPartition = 128;  // TorchRec's default

struct OptionShard {
  int table = 0;
  int col_offset = 0;
  int cols = 0;
  int64_t bytes = 0;
  double perf_ms = 0.0;
};

struct Proposal {
  bool feasible = false;
  double max_rank_ms = 0.0;
  std::vector<int> ranks;  // per shard
  std::vector<OptionShard> shards;
};

class TorchRecPlanner final : public Planner {
 public:
  std::string_view name() const override { return "torchrec"; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    validate_cluster(cluster);
    std::vector<Table> unsplittable;
    for (const auto& table : tables) {
      if (torchrec_column_width(table.dim, kMinPartition) == table.dim) unsplittable.push_back(table);
    }
    check_table_wise_capacity(unsplittable, cluster);  // names a table too large for any device
    check_total_capacity(tables, cluster);
    AnalyticCostConfig estimate;
    estimate.devices_per_host = cluster.devices_per_host;
    const int64_t usable = cluster.usable_bytes_per_device();

    std::vector<char> has_column_option(tables.size(), 0);
    std::vector<char> fits_whole(tables.size(), 0);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      has_column_option[t] = torchrec_column_width(tables[t].dim, kMinPartition) < tables[t].dim;
      fits_whole[t] = table_memory_bytes(tables[t], cluster.optimizer) <= usable;
    }
    auto propose = [&](const std::vector<char>& column_wise) {
      std::vector<OptionShard> shards;
      for (std::size_t t = 0; t < tables.size(); ++t) {
        const int width = column_wise[t] ? torchrec_column_width(tables[t].dim, kMinPartition) : tables[t].dim;
        for (int offset = 0; offset < tables[t].dim; offset += width) {
          double perf = analytic_shard_cost(shard_features(tables[t], width), cluster.num_devices, estimate).total_ms();
          shards.push_back(OptionShard{static_cast<int>(t), offset, width,
                                       shard_memory_bytes(tables[t].rows, width, tables[t].dtype, cluster.optimizer), perf});
        }
      }
      return partition(std::move(shards), cluster);
    };

    // Proposals: table-wise wherever a table fits whole; column-wise wherever TorchRec allows; then,
    // greedily, each column-capable table switched from the first to column-wise if that rates better.
    std::vector<char> choice(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) choice[t] = !fits_whole[t] && has_column_option[t];
    Proposal current = propose(choice);
    Proposal best = propose(has_column_option);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (!has_column_option[t] || choice[t]) continue;
      choice[t] = 1;
      Proposal trial = propose(choice);
      if (better(trial, current)) {
        current = std::move(trial);
      } else {
        choice[t] = 0;
      }
    }
    if (better(current, best)) best = std::move(current);
    if (!best.feasible) {
      throw InfeasibleError(fmt::format(
          "torchrec: no proposal fits: a table or column-wise shard found no device with room (each offers {}; "
          "TorchRec would need row-wise sharding here)",
          format_bytes(usable)));
    }
    return to_plan(best, tables, cluster);
  }

 private:
  static bool better(const Proposal& a, const Proposal& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.max_rank_ms < b.max_rank_ms;
  }

  // Greedy by performance: costliest shard first, onto the least-loaded rank where it fits.
  static Proposal partition(std::vector<OptionShard> shards, const Cluster& cluster) {
    Proposal out;
    std::vector<int> order(shards.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto& sa = shards[static_cast<std::size_t>(a)];
      const auto& sb = shards[static_cast<std::size_t>(b)];
      return sa.perf_ms != sb.perf_ms ? sa.perf_ms > sb.perf_ms : sa.bytes > sb.bytes;
    });
    const auto devices = static_cast<std::size_t>(cluster.num_devices);
    std::vector<double> load(devices, 0.0);
    std::vector<int64_t> used(devices, 0);
    out.ranks.assign(shards.size(), -1);
    for (int i : order) {
      const auto& shard = shards[static_cast<std::size_t>(i)];
      int best = -1;
      for (std::size_t r = 0; r < devices; ++r) {
        if (used[r] + shard.bytes > cluster.usable_bytes_per_device()) continue;
        if (best < 0 || load[r] < load[static_cast<std::size_t>(best)]) best = static_cast<int>(r);
      }
      if (best < 0) return out;  // infeasible
      load[static_cast<std::size_t>(best)] += shard.perf_ms;
      used[static_cast<std::size_t>(best)] += shard.bytes;
      out.ranks[static_cast<std::size_t>(i)] = best;
    }
    out.feasible = true;
    out.max_rank_ms = *std::max_element(load.begin(), load.end());
    out.shards = std::move(shards);
    return out;
  }

  static Plan to_plan(const Proposal& proposal, const std::vector<Table>& tables, const Cluster& cluster) {
    Plan plan;
    plan.algorithm = "torchrec";
    plan.cluster = cluster;
    // Proposals list each table's shards together, in column order.
    std::vector<std::vector<Shard>> shards(tables.size());
    for (std::size_t i = 0; i < proposal.shards.size(); ++i) {
      const auto& shard = proposal.shards[i];
      shards[static_cast<std::size_t>(shard.table)].push_back(
          Shard{proposal.ranks[i], 0, shard.col_offset, tables[static_cast<std::size_t>(shard.table)].rows, shard.cols});
    }
    plan.tables.reserve(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) plan.tables.push_back(sharding_of(tables[t], std::move(shards[t])));
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> make_torchrec_planner() { return std::make_unique<TorchRecPlanner>(); }

}  // namespace shardplan
