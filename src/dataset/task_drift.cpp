#include "shardplan/dataset/task_drift.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/strict_fp.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

enum Stream : uint64_t { kDriftStream = 61, kPoolingStream = 1, kRetireStream = 2, kChangeStream = 3 };

// The smallest pooling factor the files' four decimals keep above zero: a table that was read stays read.
constexpr double kMinDriftedPooling = 1e-4;

void check_fraction(double value, const char* setting) {
  if (!(value >= 0.0 && value < 1.0)) throw SettingError(setting, fmt::format("must be in [0, 1), got {}", value));
}

void check_config(const DriftConfig& c) {
  if (!(c.pooling_sigma >= 0.0 && c.pooling_sigma <= 3.0)) {
    throw SettingError("pooling drift", fmt::format("must be in [0, 3], got {}", c.pooling_sigma));
  }
  check_fraction(c.grow_fraction, "grown fraction");
  check_fraction(c.add_fraction, "added fraction");
  check_fraction(c.retire_fraction, "retired fraction");
  if (!(c.grow_min >= 1.0)) throw SettingError("least growth", fmt::format("must be at least 1, got {}", c.grow_min));
  if (!(c.grow_max >= c.grow_min && std::isfinite(c.grow_max))) {
    throw SettingError("most growth", fmt::format("must be finite and at least the least growth ({}), got {}",
                                                  c.grow_min, c.grow_max));
  }
  if (c.max_width < 4 || c.max_width % 4 != 0 || c.max_width > kMaxDim) {
    throw SettingError("largest width",
                       fmt::format("must be a positive multiple of 4 up to {}, got {}", kMaxDim, c.max_width));
  }
}

std::string describe(const std::string& name, const DriftConfig& c) {
  return fmt::format(
      "{} drifted: in each task of n tables, pooling factors x exp(N(0, {})); round({} n) tables grown to "
      "U[{}, {}] x their rows, round({} n) retired (one always stays), round({} n) added from the pool at a "
      "uniform width from {{4, 8, ..., {}}}; growth and additions redrawn until the task fits its cluster, "
      "else dropped; seed {}",
      name, c.pooling_sigma, c.grow_fraction, c.grow_min, c.grow_max, c.retire_fraction, c.add_fraction, c.max_width,
      c.seed);
}

std::size_t share_of(double fraction, std::size_t n) {
  return static_cast<std::size_t>(std::llround(fraction * static_cast<double>(n)));
}

// generate_task_set's rule: weights within the cluster's memory and no table over one device.
bool fits(const std::vector<Table>& tables, const Cluster& cluster) {
  const int64_t device = cluster.usable_bytes_per_device();
  long double total = 0;
  for (const Table& table : tables) {
    const int64_t bytes = table_memory_bytes(table, cluster.optimizer);
    if (bytes > device) return false;
    total += static_cast<long double>(bytes);
  }
  return total <= static_cast<long double>(device) * cluster.num_devices;
}

// `count` distinct indices of [0, n) in ascending order (a partial Fisher-Yates shuffle, as the generator
// draws tables).
std::vector<std::size_t> choose(Rng& rng, std::size_t n, std::size_t count) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t j = i + static_cast<std::size_t>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(order[i], order[j]);
  }
  order.resize(count);
  std::sort(order.begin(), order.end());
  return order;
}

// Every table's pooling factor times a log-normal factor, drawn in the task's order before any retirement
// so that the retirements do not shift which table gets which factor.
void scale_pooling(std::vector<Table>& tables, double sigma, Rng& rng) {
  for (Table& table : tables) {
    const double scaled = table.pooling_factor * std::exp(sigma * rng.normal());
    table.pooling_factor = std::clamp(scaled, std::min(table.pooling_factor, kMinDriftedPooling), kMaxPoolingFactor);
  }
}

std::vector<Table> without_retired(const std::vector<Table>& tables, std::size_t count, Rng& rng) {
  std::vector<bool> retired(tables.size(), false);
  for (std::size_t i : choose(rng, tables.size(), count)) retired[i] = true;
  std::vector<Table> survivors;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (!retired[i]) survivors.push_back(tables[i]);
  }
  return survivors;
}

// The pool tables whose names the task lacks (its retired ones included: a new table under an old name
// would pass for the old one when replanning), each name once, in pool order.
std::vector<const Table*> addable(const ShardingTask& task, const std::vector<Table>& pool) {
  std::unordered_set<std::string> taken;
  for (const Table& table : task.tables) taken.insert(table.name);
  std::vector<const Table*> out;
  for (const Table& table : pool) {
    if (taken.insert(table.name).second) out.push_back(&table);
  }
  return out;
}

// One draw of growth and additions on the survivors.
std::vector<Table> grow_and_add(std::vector<Table> tables, std::size_t grow,
                                const std::vector<const Table*>& candidates, std::size_t add, const DriftConfig& c,
                                Rng& rng) {
  for (std::size_t i : choose(rng, tables.size(), grow)) {
    const double factor = c.grow_min + (c.grow_max - c.grow_min) * rng.uniform();
    const double rows = std::min(static_cast<double>(tables[i].rows) * factor, static_cast<double>(kMaxRows));
    tables[i].rows = std::max(tables[i].rows, static_cast<int64_t>(std::llround(rows)));
  }
  for (std::size_t i : choose(rng, candidates.size(), add)) {
    Table table = *candidates[i];
    table.dim = 4 * (1 + static_cast<int>(rng.below(static_cast<uint64_t>(c.max_width / 4))));
    tables.push_back(std::move(table));
  }
  return tables;
}

ShardingTask drift_task(const TaskSet& set, std::size_t index, const std::vector<Table>& pool, const DriftConfig& c,
                        uint64_t task_seed, TaskDriftStats& stats) {
  const ShardingTask& task = set.tasks[index];
  const std::size_t n = task.tables.size();
  if (n == 0) throw InputError(fmt::format("task set {}: tasks[{}] has no tables", set.name, index));
  std::vector<Table> tables = task.tables;
  Rng pooling(derive_seed(task_seed, kPoolingStream));
  scale_pooling(tables, c.pooling_sigma, pooling);

  const std::size_t retire = std::min(share_of(c.retire_fraction, n), n - 1);
  Rng retiring(derive_seed(task_seed, kRetireStream));
  std::vector<Table> survivors = without_retired(tables, retire, retiring);
  stats.retired += static_cast<int64_t>(retire);
  const Cluster cluster = set.cluster();
  if (!fits(survivors, cluster)) {
    throw InputError(fmt::format("task set {}: tasks[{}] does not fit its {} GPUs x {} even without its retired tables",
                                 set.name, index, set.num_devices, format_bytes(set.memory_per_device_bytes)));
  }

  const std::vector<const Table*> candidates = addable(task, pool);
  const std::size_t grow = std::min(share_of(c.grow_fraction, n), survivors.size());
  const std::size_t add = std::min(share_of(c.add_fraction, n), candidates.size());
  if (grow == 0 && add == 0) return ShardingTask{std::move(survivors)};
  Rng changing(derive_seed(task_seed, kChangeStream));
  for (int draw = 0; draw < kMaxDriftDraws; ++draw) {
    std::vector<Table> drifted = grow_and_add(survivors, grow, candidates, add, c, changing);
    if (fits(drifted, cluster)) {
      stats.grown += static_cast<int64_t>(grow);
      stats.added += static_cast<int64_t>(add);
      return ShardingTask{std::move(drifted)};
    }
    stats.redraws += 1;
  }
  stats.fallbacks += 1;
  return ShardingTask{std::move(survivors)};
}

}  // namespace

TaskSet drift_task_set(const TaskSet& set, const std::vector<Table>& pool, const DriftConfig& config,
                       TaskDriftStats* stats) {
  check_config(config);
  validate_cluster(set.cluster());
  TaskDriftStats local;
  TaskDriftStats& counts = stats != nullptr ? *stats : local;
  counts = TaskDriftStats{};
  TaskSet out;
  out.name = set.name + "-drift";
  out.description = describe(set.name, config);
  out.num_devices = set.num_devices;
  out.memory_per_device_bytes = set.memory_per_device_bytes;
  // The set's name is mixed in as generate_task_set does, so sets drifted with the same seed drift apart.
  const uint64_t set_seed = derive_seed(config.seed, kDriftStream ^ fnv1a_hash(set.name));
  for (std::size_t i = 0; i < set.tasks.size(); ++i) {
    out.tasks.push_back(drift_task(set, i, pool, config, derive_seed(set_seed, i), counts));
  }
  return out;
}

}  // namespace shardplan
