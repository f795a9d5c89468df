#pragma once
// Sharding task sets drawn from the table pool: the paper's protocol on 4 and 8 GPUs, and the whole pool
// on 128 GPUs. Choices and reasons: docs/dataset.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/dataset/task_set.hpp"

namespace shardplan {

enum class TaskProtocol { kPaper4Gpu, kPaper8Gpu, kAll128Gpu };

std::string_view task_protocol_name(TaskProtocol protocol);  // "paper-4gpu", "paper-8gpu", "all-128gpu"
std::optional<TaskProtocol> parse_task_protocol(std::string_view name);

struct TaskSetConfig {
  std::string name;
  std::string description;
  int num_devices = 4;
  int64_t memory_per_device_bytes = 4ll << 30;
  int num_tasks = 100;
  int min_tables = 10;  // tables per task, drawn uniformly in [min, max], without replacement
  int max_tables = 60;
  bool whole_pool = false;    // every task holds all pool tables (min/max_tables unused)
  bool random_widths = true;  // each table at a uniform width from {4, 8, ..., max_width}; else the pool's
  int max_width = 128;
  uint64_t seed = 0;
};

// The protocol's defaults (the description is filled in by generate_task_set when empty).
TaskSetConfig protocol_config(TaskProtocol protocol, uint64_t seed);

// Redraws (same table count, new tables and widths) until a draw fits: its fp32 weights within the
// cluster's total memory and no table larger than one device (no table-wise plan could place it).
struct TaskDrawStats {
  int64_t draws = 0;
  int64_t rejected_over_cluster = 0;
  int64_t rejected_table_over_device = 0;
};

// Tables keep their pool names and are listed in pool order. The set's name is mixed into the seed.
// Throws SettingError naming a setting out of its range ("tasks", "fewest tables per task", "most tables
// per task", "largest width", the cluster's "GPUs" and "memory per GPU"), InputError for an empty pool, and
// InfeasibleSetting ("fewest tables per task", "most tables per task", or "memory per GPU" when tasks take
// the whole pool) when no draw can fit or a task finds none in kMaxDrawsPerTask attempts.
inline constexpr int64_t kMaxDrawsPerTask = 100'000;
TaskSet generate_task_set(const std::vector<Table>& pool, const TaskSetConfig& config, TaskDrawStats* stats = nullptr);

struct TaskSetSummary {
  std::size_t num_tasks = 0;
  int min_tables = 0;
  int max_tables = 0;
  double mean_tables = 0.0;
  double min_memory_fraction = 0.0;  // task weights / cluster memory
  double mean_memory_fraction = 0.0;
  double max_memory_fraction = 0.0;
  int greedy_placeable = 0;  // tasks the size_greedy planner places table-wise
};

TaskSetSummary summarize_task_set(const TaskSet& set);

}  // namespace shardplan
