#include "greedy_baselines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "shardplan/core/capacity.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

// Tracks memory per device and explains, when a table fits nowhere, how close it came.
class MemoryLedger {
 public:
  explicit MemoryLedger(const Cluster& cluster)
      : cluster_(cluster), used_(static_cast<std::size_t>(cluster.num_devices), 0) {}

  bool fits(int rank, int64_t bytes) const {
    return used_[static_cast<std::size_t>(rank)] + bytes <= cluster_.usable_bytes_per_device();
  }
  void add(int rank, int64_t bytes) { used_[static_cast<std::size_t>(rank)] += bytes; }
  int64_t used(int rank) const { return used_[static_cast<std::size_t>(rank)]; }

  [[noreturn]] void throw_no_fit(const Table& table, int64_t bytes, std::string_view algorithm) const {
    auto most_free = std::min_element(used_.begin(), used_.end());
    int rank = static_cast<int>(most_free - used_.begin());
    throw InfeasibleError(fmt::format(
        "{}: table \"{}\" needs {} but no device has room left: the most free is device {} with {} of {} usable "
        "(table-wise placement cannot split tables; try more GPUs or more memory per GPU)",
        algorithm, table.name, format_bytes(bytes), rank, format_bytes(cluster_.usable_bytes_per_device() - *most_free),
        format_bytes(cluster_.usable_bytes_per_device())));
  }

 private:
  const Cluster& cluster_;
  std::vector<int64_t> used_;
};

Plan empty_plan(std::string_view algorithm, const std::vector<Table>& tables, const Cluster& cluster, uint64_t seed) {
  Plan plan;
  plan.algorithm = std::string(algorithm);
  plan.cluster = cluster;
  plan.seed = seed;
  plan.tables.resize(tables.size());
  return plan;
}

// These baselines place tables whole: table-wise, or as one column-wise slice where a table may only be
// column-wise (sharding_of). A table that may be neither is beyond them.
void refuse_tables_not_whole(const std::vector<Table>& tables, const Cluster& cluster, std::string_view algorithm) {
  check_table_constraints(tables, cluster.num_devices, ShardingTypeSet::all());
  if (const Table* table = first_table_without(tables, ShardingTypeSet::all(), ShardingTypeSet::table_and_column())) {
    throw InfeasibleError(fmt::format("{}: table \"{}\" may only be {}, and this planner places tables whole",
                                      algorithm, table->name,
                                      sharding_types_string(table->constraints.sharding_types)));
  }
}

// Largest tables first, ties in input order: the order in which memory is hardest to find.
std::vector<std::size_t> order_by_descending(const std::vector<double>& key) {
  std::vector<std::size_t> order(key.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] > key[b]; });
  return order;
}

class GreedyBaseline final : public Planner {
 public:
  GreedyBaseline(std::string name, TableWeight weight) : name_(std::move(name)), weight_(std::move(weight)) {}

  std::string_view name() const override { return name_; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    validate_cluster(cluster);
    refuse_tables_not_whole(tables, cluster, name_);
    check_table_wise_capacity(tables, cluster);
    std::vector<double> weight(tables.size());
    for (std::size_t i = 0; i < tables.size(); ++i) weight[i] = weight_(tables[i], cluster);

    Plan plan = empty_plan(name_, tables, cluster, 0);
    MemoryLedger memory(cluster);
    std::vector<double> load(static_cast<std::size_t>(cluster.num_devices), 0.0);
    for (std::size_t t : order_by_descending(weight)) {
      int64_t bytes = table_memory_bytes(tables[t], cluster.optimizer);
      int best = -1;
      for (int r = 0; r < cluster.num_devices; ++r) {
        if (!memory.fits(r, bytes) || !tables[t].constraints.allows_rank(r)) continue;
        if (best < 0 || load[r] < load[best] || (load[r] == load[best] && memory.used(r) < memory.used(best))) {
          best = r;
        }
      }
      if (best < 0) memory.throw_no_fit(tables[t], bytes, name_);
      memory.add(best, bytes);
      load[static_cast<std::size_t>(best)] += weight[t];
      plan.tables[t] = table_wise_sharding(tables[t], best);
    }
    return plan;
  }

 private:
  std::string name_;
  TableWeight weight_;
};

// Uniform in [0, n) from a standardised generator, so plans match across standard libraries.
int uniform_index(std::mt19937_64& rng, int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }

class RandomBaseline final : public Planner {
 public:
  explicit RandomBaseline(uint64_t seed) : seed_(seed) {}

  std::string_view name() const override { return "random"; }

  // Largest tables first, each on a uniformly drawn device among those where it still fits.
  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    validate_cluster(cluster);
    refuse_tables_not_whole(tables, cluster, "random");
    check_table_wise_capacity(tables, cluster);
    std::vector<double> bytes(tables.size());
    for (std::size_t i = 0; i < tables.size(); ++i) {
      bytes[i] = static_cast<double>(table_memory_bytes(tables[i], cluster.optimizer));
    }
    Plan plan = empty_plan("random", tables, cluster, seed_);
    MemoryLedger memory(cluster);
    std::mt19937_64 rng(seed_);
    std::vector<int> fitting;
    for (std::size_t t : order_by_descending(bytes)) {
      auto size = static_cast<int64_t>(bytes[t]);
      fitting.clear();
      for (int r = 0; r < cluster.num_devices; ++r) {
        if (memory.fits(r, size) && tables[t].constraints.allows_rank(r)) fitting.push_back(r);
      }
      if (fitting.empty()) memory.throw_no_fit(tables[t], size, "random");
      int rank = fitting[static_cast<std::size_t>(uniform_index(rng, static_cast<int>(fitting.size())))];
      memory.add(rank, size);
      plan.tables[t] = table_wise_sharding(tables[t], rank);
    }
    return plan;
  }

 private:
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Planner> make_greedy_baseline(std::string name, TableWeight weight) {
  return std::make_unique<GreedyBaseline>(std::move(name), std::move(weight));
}

std::unique_ptr<Planner> make_random_baseline(uint64_t seed) { return std::make_unique<RandomBaseline>(seed); }

}  // namespace shardplan
