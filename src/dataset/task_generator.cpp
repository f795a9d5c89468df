#include "shardplan/dataset/task_generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

namespace {

enum Stream : uint64_t { kTaskStream = 21 };

// The whole pool on 128 GPUs: 40 GiB each, the share of an 80 GB H100 left to embeddings once dense
// layers, activations and all-to-all buffers take theirs; the largest pool table (~35 GiB) still fits
// on one device, which table-wise placement needs.
constexpr int64_t kAllPoolMemoryPerDevice = 40ll << 30;

std::string describe(const TaskSetConfig& c) {
  std::string widths = c.random_widths ? fmt::format("each at a uniform width from {{4, 8, ..., {}}}", c.max_width)
                                       : "at the pool's widths";
  std::string count = c.whole_pool                   ? std::string("all")
                      : c.min_tables == c.max_tables ? fmt::format("{}", c.min_tables)
                                                     : fmt::format("{} to {}", c.min_tables, c.max_tables);
  return fmt::format(
      "{} task{} of {} pool tables {}, on {} GPUs with {} each (fp32 weights, no optimizer state); "
      "draws over the cluster's memory or with a table over one GPU are redrawn; seed {}",
      c.num_tasks, c.num_tasks == 1 ? "" : "s", count, widths, c.num_devices, format_bytes(c.memory_per_device_bytes),
      c.seed);
}

void check_config(const std::vector<Table>& pool, const TaskSetConfig& c) {
  if (pool.empty()) throw InputError("gen-tasks: the pool has no tables");
  if (c.num_tasks < 1) throw SettingError("tasks", fmt::format("must be at least 1, got {}", c.num_tasks));
  if (!c.whole_pool && (c.min_tables < 1 || c.min_tables > c.max_tables)) {
    throw SettingError("fewest tables per task", fmt::format("must be in [1, {}] (the most tables per task), got {}",
                                                             c.max_tables, c.min_tables));
  }
  if (!c.whole_pool && static_cast<std::size_t>(c.max_tables) > pool.size()) {
    throw SettingError("most tables per task",
                       fmt::format("must not exceed the pool's {} tables, got {}", pool.size(), c.max_tables));
  }
  // The cluster's GPUs and memory are the cluster's to check.
  Cluster cluster;
  cluster.num_devices = c.num_devices;
  cluster.memory_per_device_bytes = c.memory_per_device_bytes;
  validate_cluster(cluster);
  if (c.random_widths && (c.max_width < 4 || c.max_width % 4 != 0 || c.max_width > kMaxDim)) {
    throw SettingError("largest width",
                       fmt::format("must be a positive multiple of 4 up to {}, got {}", kMaxDim, c.max_width));
  }
}

// No draw fits: blamed on the task's table count (`tables_setting`), or on the memory when every task
// takes the whole pool.
[[noreturn]] void no_fitting_draw(const TaskSetConfig& c, const char* tables_setting, const std::string& what) {
  if (c.whole_pool) throw InfeasibleSetting("memory per GPU", what + "; raise it");
  throw InfeasibleSetting(tables_setting, what + "; lower it or raise the memory per GPU");
}

// Refuses at once what no draw can satisfy, instead of exhausting the draw budget: fewer tables that fit
// one device (at their smallest possible width) than a task needs, or the smallest such tables already
// over the cluster.
void check_drawable(const std::vector<Table>& pool, const TaskSetConfig& c, int min_tables, const Cluster& cluster) {
  std::vector<int64_t> smallest;
  for (const Table& table : pool) {
    Table narrowest = table;
    if (c.random_widths) narrowest.dim = 4;
    int64_t bytes = table_memory_bytes(narrowest, cluster.optimizer);
    if (bytes <= cluster.usable_bytes_per_device()) smallest.push_back(bytes);
  }
  std::sort(smallest.begin(), smallest.end());
  long double least = 0;
  for (std::size_t i = 0; i < smallest.size() && i < static_cast<std::size_t>(min_tables); ++i) least += smallest[i];
  const long double capacity = static_cast<long double>(cluster.usable_bytes_per_device()) * cluster.num_devices;
  if (smallest.size() < static_cast<std::size_t>(min_tables) || least > capacity) {
    no_fitting_draw(c, "fewest tables per task",
                    fmt::format("no draw of {} pool tables can fit {} GPUs x {} ({} tables fit one GPU at all)",
                                min_tables, c.num_devices, format_bytes(c.memory_per_device_bytes), smallest.size()));
  }
}

}  // namespace

std::string_view task_protocol_name(TaskProtocol protocol) {
  switch (protocol) {
    case TaskProtocol::kPaper4Gpu:
      return "paper-4gpu";
    case TaskProtocol::kPaper8Gpu:
      return "paper-8gpu";
    case TaskProtocol::kAll128Gpu:
      return "all-128gpu";
  }
  return "paper-4gpu";
}

std::optional<TaskProtocol> parse_task_protocol(std::string_view name) {
  for (TaskProtocol p : {TaskProtocol::kPaper4Gpu, TaskProtocol::kPaper8Gpu, TaskProtocol::kAll128Gpu}) {
    if (task_protocol_name(p) == name) return p;
  }
  return std::nullopt;
}

TaskSetConfig protocol_config(TaskProtocol protocol, uint64_t seed) {
  TaskSetConfig c;
  c.name = std::string(task_protocol_name(protocol));
  c.seed = seed;
  switch (protocol) {
    case TaskProtocol::kPaper4Gpu:
      break;  // the struct's defaults: 100 tasks of 10-60 tables, widths 4..128, 4 GPUs x 4 GiB
    case TaskProtocol::kPaper8Gpu:
      c.num_devices = 8;
      c.min_tables = 20;
      c.max_tables = 120;
      break;
    case TaskProtocol::kAll128Gpu:
      c.num_devices = 128;
      c.memory_per_device_bytes = kAllPoolMemoryPerDevice;
      c.num_tasks = 1;
      c.whole_pool = true;
      c.random_widths = false;
      break;
  }
  return c;
}

TaskSet generate_task_set(const std::vector<Table>& pool, const TaskSetConfig& config, TaskDrawStats* stats) {
  check_config(pool, config);
  TaskDrawStats local;
  TaskDrawStats& counts = stats != nullptr ? *stats : local;
  counts = TaskDrawStats{};
  TaskSet set;
  set.name = config.name;
  set.description = config.description.empty() ? describe(config) : config.description;
  set.num_devices = config.num_devices;
  set.memory_per_device_bytes = config.memory_per_device_bytes;
  const Cluster cluster = set.cluster();
  const int64_t device_bytes = cluster.usable_bytes_per_device();
  const long double cluster_bytes = static_cast<long double>(device_bytes) * cluster.num_devices;

  const int min_tables = config.whole_pool ? static_cast<int>(pool.size()) : config.min_tables;
  const int max_tables = config.whole_pool ? static_cast<int>(pool.size()) : config.max_tables;
  check_drawable(pool, config, min_tables, cluster);
  // The set's name is mixed into the seed so that sets drawn with the same --seed (paper-4gpu and
  // paper-8gpu) are not built from the same random sequence.
  Rng rng(derive_seed(config.seed, kTaskStream ^ fnv1a_hash(config.name)));
  std::vector<std::size_t> order(pool.size());
  const auto span = static_cast<uint64_t>(max_tables - min_tables + 1);
  for (int task = 0; task < config.num_tasks; ++task) {
    const int count = min_tables + static_cast<int>(rng.below(span));
    ShardingTask drawn;
    for (int64_t attempt = 0;; ++attempt) {
      if (attempt == kMaxDrawsPerTask) {
        no_fitting_draw(config, "most tables per task",
                        fmt::format("task {}: none of {} draws of {} tables fit {} GPUs x {}", task, kMaxDrawsPerTask,
                                    count, config.num_devices, format_bytes(config.memory_per_device_bytes)));
      }
      counts.draws += 1;
      // A partial Fisher-Yates shuffle picks `count` distinct tables; listed in pool order.
      std::iota(order.begin(), order.end(), 0);
      for (int i = 0; i < count; ++i) {
        std::size_t j = static_cast<std::size_t>(i) +
                        static_cast<std::size_t>(rng.below(order.size() - static_cast<std::size_t>(i)));
        std::swap(order[static_cast<std::size_t>(i)], order[j]);
      }
      std::sort(order.begin(), order.begin() + count);
      drawn.tables.clear();
      long double total = 0;
      bool table_too_big = false;
      for (int i = 0; i < count; ++i) {
        Table table = pool[order[static_cast<std::size_t>(i)]];
        if (config.random_widths) {
          table.dim = 4 * (1 + static_cast<int>(rng.below(static_cast<uint64_t>(config.max_width / 4))));
        }
        int64_t bytes = table_memory_bytes(table, cluster.optimizer);
        table_too_big = table_too_big || bytes > device_bytes;
        total += static_cast<long double>(bytes);
        drawn.tables.push_back(std::move(table));
      }
      if (table_too_big) {
        counts.rejected_table_over_device += 1;
      } else if (total > cluster_bytes) {
        counts.rejected_over_cluster += 1;
      } else {
        break;
      }
    }
    set.tasks.push_back(std::move(drawn));
  }
  return set;
}

TaskSetSummary summarize_task_set(const TaskSet& set) {
  TaskSetSummary s;
  s.num_tasks = set.tasks.size();
  if (set.tasks.empty()) return s;
  const Cluster cluster = set.cluster();
  const long double capacity = static_cast<long double>(cluster.usable_bytes_per_device()) * cluster.num_devices;
  auto planner = make_planner("size_greedy", PlannerConfig());
  s.min_tables = std::numeric_limits<int>::max();
  s.min_memory_fraction = std::numeric_limits<double>::infinity();
  double tables_sum = 0.0;
  double fraction_sum = 0.0;
  for (const auto& task : set.tasks) {
    int n = static_cast<int>(task.tables.size());
    s.min_tables = std::min(s.min_tables, n);
    s.max_tables = std::max(s.max_tables, n);
    tables_sum += n;
    long double bytes = 0;
    for (const auto& table : task.tables) {
      bytes += static_cast<long double>(table_memory_bytes(table, cluster.optimizer));
    }
    double fraction = static_cast<double>(bytes / capacity);
    s.min_memory_fraction = std::min(s.min_memory_fraction, fraction);
    s.max_memory_fraction = std::max(s.max_memory_fraction, fraction);
    fraction_sum += fraction;
    try {
      planner->plan(task.tables, cluster);
      s.greedy_placeable += 1;
    } catch (const InfeasibleError&) {
      // counted as not placeable
    }
  }
  s.mean_tables = tables_sum / static_cast<double>(s.num_tasks);
  s.mean_memory_fraction = fraction_sum / static_cast<double>(s.num_tasks);
  return s;
}

}  // namespace shardplan
