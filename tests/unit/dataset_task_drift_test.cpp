#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "shardplan/core/errors.hpp"
#include "shardplan/dataset/pool_generator.hpp"
#include "shardplan/dataset/task_drift.hpp"
#include "shardplan/dataset/task_generator.hpp"

namespace shardplan {
namespace {

const std::vector<Table>& pool() {
  static const std::vector<Table> tables = generate_pool(PoolConfig{});
  return tables;
}

const TaskSet& paper_set() {
  static const TaskSet set = [] {
    TaskSetConfig config = protocol_config(TaskProtocol::kPaper4Gpu, 3);
    config.num_tasks = 30;
    return generate_task_set(pool(), config);
  }();
  return set;
}

std::size_t share(double fraction, std::size_t n) { return static_cast<std::size_t>(std::llround(fraction * n)); }

bool fits(const ShardingTask& task, const Cluster& cluster) {
  const int64_t device = cluster.usable_bytes_per_device();
  int64_t total = 0;
  for (const Table& t : task.tables) {
    const int64_t bytes = table_memory_bytes(t, cluster.optimizer);
    if (bytes > device) return false;
    total += bytes;
  }
  return total <= device * cluster.num_devices;
}

Table table(std::string name, int64_t rows, int dim) {
  Table t;
  t.name = std::move(name);
  t.rows = rows;
  t.dim = dim;
  t.pooling_factor = 3.0;
  return t;
}

TaskSet one_task_set(std::vector<Table> tables, int devices, int64_t memory) {
  TaskSet set;
  set.name = "hand";
  set.num_devices = devices;
  set.memory_per_device_bytes = memory;
  set.tasks.push_back(ShardingTask{std::move(tables)});
  return set;
}

TEST(DatasetTaskDrift, SameSeedSameSetOtherSeedOtherSet) {
  DriftConfig config;
  config.seed = 7;
  const std::string a = format_task_set(drift_task_set(paper_set(), pool(), config));
  const std::string b = format_task_set(drift_task_set(paper_set(), pool(), config));
  config.seed = 8;
  const std::string c = format_task_set(drift_task_set(paper_set(), pool(), config));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Per task: the counts the fractions ask for, survivors first (old order, old names and fields but for
// rows and pooling factor), then new pool tables; every task still fits.
TEST(DatasetTaskDrift, EachTaskRetiresGrowsAndAddsItsShareAndStillFits) {
  DriftConfig config;
  config.seed = 1;
  config.grow_fraction = 0.2;
  config.retire_fraction = 0.15;
  config.add_fraction = 0.1;
  TaskDriftStats stats;
  const TaskSet& old_set = paper_set();
  const TaskSet set = drift_task_set(old_set, pool(), config, &stats);
  EXPECT_EQ(set.name, "paper-4gpu-drift");
  EXPECT_EQ(set.num_devices, old_set.num_devices);
  EXPECT_EQ(set.memory_per_device_bytes, old_set.memory_per_device_bytes);
  EXPECT_NE(set.description.find("seed 1"), std::string::npos) << set.description;
  ASSERT_EQ(set.tasks.size(), old_set.tasks.size());
  std::map<std::string, const Table*> in_pool;
  for (const Table& t : pool()) in_pool[t.name] = &t;

  int64_t retired = 0, grown = 0, added = 0;
  int unchanged = 0;
  for (std::size_t k = 0; k < set.tasks.size(); ++k) {
    const auto& before = old_set.tasks[k].tables;
    const auto& after = set.tasks[k].tables;
    EXPECT_TRUE(fits(set.tasks[k], set.cluster())) << "task " << k;
    // Survivors: a subsequence of the old tables, matched by name.
    std::size_t i = 0, j = 0;
    int task_grown = 0;
    for (; i < before.size() && j < after.size(); ++i) {
      if (before[i].name != after[j].name) continue;
      EXPECT_EQ(after[j].dim, before[i].dim);
      EXPECT_EQ(after[j].reuse_hist, before[i].reuse_hist);
      if (after[j].rows != before[i].rows) {
        task_grown += 1;
        EXPECT_GE(after[j].rows, std::llround(before[i].rows * config.grow_min) - 1);
        EXPECT_LE(after[j].rows, std::llround(before[i].rows * config.grow_max) + 1);
      }
      ++j;
    }
    const std::size_t survivors = j;
    const std::size_t n = before.size();
    EXPECT_EQ(n - survivors, std::min(share(config.retire_fraction, n), n - 1)) << "task " << k;
    // Additions: pool tables the old task lacked, in pool order, at a random width.
    std::set<std::string> old_names;
    for (const Table& t : before) old_names.insert(t.name);
    std::set<std::string> new_names;
    std::string previous;
    for (; j < after.size(); ++j) {
      const Table& t = after[j];
      EXPECT_EQ(old_names.count(t.name), 0u) << t.name;
      ASSERT_EQ(in_pool.count(t.name), 1u) << t.name;
      EXPECT_EQ(t.rows, in_pool.at(t.name)->rows);
      EXPECT_EQ(t.pooling_factor, in_pool.at(t.name)->pooling_factor);
      EXPECT_TRUE(t.dim % 4 == 0 && t.dim >= 4 && t.dim <= config.max_width) << t.dim;
      if (!previous.empty()) {
        EXPECT_LT(in_pool.at(previous), in_pool.at(t.name));  // pool order
      }
      previous = t.name;
    }
    for (const Table& t : after) EXPECT_TRUE(new_names.insert(t.name).second) << "duplicate " << t.name;
    const std::size_t task_added = after.size() - survivors;
    if (task_grown > 0 || task_added > 0) {
      EXPECT_EQ(static_cast<std::size_t>(task_grown), share(config.grow_fraction, n)) << "task " << k;
      EXPECT_EQ(task_added, share(config.add_fraction, n)) << "task " << k;
    } else {
      unchanged += 1;  // a fallback: every task here asks for growth and additions
    }
    retired += static_cast<int64_t>(n - survivors);
    grown += task_grown;
    added += static_cast<int64_t>(task_added);
  }
  EXPECT_EQ(stats.retired, retired);
  EXPECT_EQ(stats.grown, grown);
  EXPECT_EQ(stats.added, added);
  EXPECT_GT(grown, 0);
  EXPECT_GT(added, 0);
  EXPECT_EQ(stats.fallbacks, unchanged);
}

// log(new / old) pooling factor is N(0, sigma); sigma 0 keeps every factor.
TEST(DatasetTaskDrift, PoolingFactorsScaleLogNormally) {
  DriftConfig config;
  config.seed = 2;
  config.grow_fraction = config.add_fraction = config.retire_fraction = 0.0;
  config.pooling_sigma = 0.0;
  const auto tasks_text = [](const TaskSet& s) {  // the set's name and description differ
    const std::string text = format_task_set(s);
    return text.substr(text.find("\"tasks\""));
  };
  EXPECT_EQ(tasks_text(drift_task_set(paper_set(), pool(), config)), tasks_text(paper_set()));

  config.pooling_sigma = 0.5;
  const TaskSet set = drift_task_set(paper_set(), pool(), config);
  double sum = 0.0, squares = 0.0;
  int count = 0;
  for (std::size_t k = 0; k < set.tasks.size(); ++k) {
    ASSERT_EQ(set.tasks[k].tables.size(), paper_set().tasks[k].tables.size());
    for (std::size_t i = 0; i < set.tasks[k].tables.size(); ++i) {
      const Table& before = paper_set().tasks[k].tables[i];
      const Table& after = set.tasks[k].tables[i];
      EXPECT_EQ(after.name, before.name);
      EXPECT_EQ(after.rows, before.rows);
      const double z = std::log(after.pooling_factor / before.pooling_factor);
      sum += z;
      squares += z * z;
      count += 1;
    }
  }
  ASSERT_GT(count, 300);
  const double mean = sum / count;
  const double sd = std::sqrt(squares / count - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(sd, 0.5, 0.06);
}

TEST(DatasetTaskDrift, KeepsEveryOtherFieldAndOneTableAlwaysStays) {
  Table special = table("x", 1000, 16);
  special.dtype = DType::kFp16;
  special.constraints.sharding_types = ShardingTypeSet::table_and_column();
  special.constraints.ranks = {1};
  DriftConfig config;
  config.retire_fraction = 0.9;  // round(0.9 x 1) = 1, but the last table stays
  TaskDriftStats stats;
  TaskSet set = drift_task_set(one_task_set({special}, 2, 1 << 30), {}, config, &stats);
  ASSERT_EQ(set.tasks[0].tables.size(), 1u);
  const Table& kept = set.tasks[0].tables[0];
  EXPECT_EQ(kept.name, "x");
  EXPECT_EQ(kept.dtype, DType::kFp16);
  EXPECT_EQ(kept.constraints.sharding_types, ShardingTypeSet::table_and_column());
  EXPECT_EQ(kept.constraints.ranks, std::vector<int>{1});
  EXPECT_EQ(stats.retired, 0);

  std::vector<Table> five;
  for (int i = 0; i < 5; ++i) five.push_back(table("t" + std::to_string(i), 1000, 16));
  set = drift_task_set(one_task_set(five, 2, 1 << 30), {}, config, &stats);  // round(4.5) = 5, capped at 4
  EXPECT_EQ(set.tasks[0].tables.size(), 1u);
  EXPECT_EQ(stats.retired, 4);
}

// Growth that no draw can fit falls back to no growth (and no additions), counted; a fitting addition is
// kept, whether or not the pool also holds a table that cannot fit.
TEST(DatasetTaskDrift, GrowthOrAdditionsThatCannotFitFallBack) {
  // 8 tables of 256,000 bytes fill 2 GPUs of 1 MiB to 97.7%: any growth (x1.25 at least) overflows.
  std::vector<Table> tables;
  for (int i = 0; i < 8; ++i) tables.push_back(table("t" + std::to_string(i), 1000, 64));
  const TaskSet full = one_task_set(tables, 2, 1 << 20);
  DriftConfig config;
  config.retire_fraction = 0.0;
  config.grow_fraction = 0.2;
  config.add_fraction = 0.0;
  TaskDriftStats stats;
  TaskSet set = drift_task_set(full, {}, config, &stats);
  EXPECT_EQ(stats.fallbacks, 1);
  EXPECT_EQ(stats.grown, 0);
  EXPECT_EQ(stats.redraws, kMaxDriftDraws);
  for (std::size_t i = 0; i < tables.size(); ++i) EXPECT_EQ(set.tasks[0].tables[i].rows, tables[i].rows);

  // One table at 90% of one GPU, on many GPUs: growth would put it over one GPU.
  const TaskSet big = one_task_set({table("big", 3686, 64)}, 64, 1 << 20);
  config.grow_fraction = 0.5;
  set = drift_task_set(big, {}, config, &stats);
  EXPECT_EQ(stats.fallbacks, 1);
  EXPECT_EQ(set.tasks[0].tables[0].rows, 3686);

  // Additions: a pool of one table over any GPU and one that fits; the fitting one is added.
  config.grow_fraction = 0.0;
  config.add_fraction = 0.5;
  std::vector<Table> small_pool = {table("huge", 1'000'000, 64), table("small", 10, 64), table("t0", 10, 64)};
  tables.resize(2);
  set = drift_task_set(one_task_set(tables, 2, 1 << 20), small_pool, config, &stats);
  EXPECT_EQ(stats.fallbacks, 0);
  EXPECT_EQ(stats.added, 1);
  ASSERT_EQ(set.tasks[0].tables.size(), 3u);
  EXPECT_EQ(set.tasks[0].tables[2].name, "small");  // t0 is the task's: never added again
}

std::pair<std::string, ExitCode> refused(const DriftConfig& config) {
  try {
    drift_task_set(paper_set(), pool(), config);
  } catch (const Error& e) {
    return {e.setting(), e.code()};
  }
  return {"", ExitCode::kOk};
}

TEST(DatasetTaskDrift, SettingsOutOfRangeAreNamed) {
  const auto bad = [](const std::string& setting) { return std::make_pair(setting, ExitCode::kBadInput); };
  DriftConfig config;
  config.pooling_sigma = 3.5;
  EXPECT_EQ(refused(config), bad("pooling drift"));
  config.pooling_sigma = NAN;
  EXPECT_EQ(refused(config), bad("pooling drift"));
  config = DriftConfig{};
  config.grow_fraction = 1.0;
  EXPECT_EQ(refused(config), bad("grown fraction"));
  config = DriftConfig{};
  config.add_fraction = -0.1;
  EXPECT_EQ(refused(config), bad("added fraction"));
  config = DriftConfig{};
  config.retire_fraction = 1.0;
  EXPECT_EQ(refused(config), bad("retired fraction"));
  config = DriftConfig{};
  config.grow_min = 0.9;
  EXPECT_EQ(refused(config), bad("least growth"));
  config = DriftConfig{};
  config.grow_max = 1.1;
  EXPECT_EQ(refused(config), bad("most growth"));
  config = DriftConfig{};
  config.max_width = 6;
  EXPECT_EQ(refused(config), bad("largest width"));
  config = DriftConfig{};
  config.grow_min = config.grow_max = 1.5;  // a fixed growth is allowed
  EXPECT_EQ(refused(config), std::make_pair(std::string(), ExitCode::kOk));

  // A task that does not fit its own cluster, even with its retirements, is bad input.
  const TaskSet over = one_task_set({table("a", 1 << 20, 64), table("b", 1 << 20, 64)}, 1, 1 << 20);
  EXPECT_THROW(drift_task_set(over, {}, DriftConfig{}), InputError);
}

}  // namespace
}  // namespace shardplan
