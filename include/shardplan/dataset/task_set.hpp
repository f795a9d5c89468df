#pragma once
// Sharding tasks for `shard-plan bench`: self-contained JSON, a cluster and a list of tasks, each a set
// of tables (inline, in the tables format) to place on that cluster.
//   {"name": "paper-4gpu", "description": "...", "num_devices": 4, "memory_per_device_bytes": 4294967296,
//    "tasks": [{"tables": [{"name": "t12", "rows": ..., "dim": ..., ...}, ...]}, ...]}
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

struct ShardingTask {
  std::vector<Table> tables;  // names are the pool's (t0 ... t855), so a task traces back to the pool
};

struct TaskSet {
  std::string name;
  std::string description;  // free text, optional
  int num_devices = 0;
  int64_t memory_per_device_bytes = 0;
  std::vector<ShardingTask> tasks;

  // The cluster every task is planned for: fp32 weights, no optimizer state, nothing reserved.
  Cluster cluster() const;
};

// Parses a task set; `source` (the file name) prefixes every error, which names the JSON path and the
// value ("tasks.json: tasks[3].tables[5].dim: must be a positive multiple of 4, got 13"). Throws InputError.
TaskSet parse_task_set(const nlohmann::json& doc, std::string_view source);

// Reads and parses a task set file. Throws InputError (missing file, malformed JSON, bad fields).
TaskSet load_task_set(const std::string& path);

// The file's content (tables rounded as in data_files.hpp), keys in the documented order.
nlohmann::ordered_json task_set_to_json(const TaskSet& set);

// The file text: task_set_to_json in the shared readable layout (one table per line); ends with a newline.
std::string format_task_set(const TaskSet& set);

}  // namespace shardplan
