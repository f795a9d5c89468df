#include "shardplan/dataset/task_set.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/json_format.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/dataset/data_files.hpp"

namespace shardplan {

namespace {

// Unknown keys are likely typos of these; they are reported, not silently dropped.
const std::set<std::string>& known_set_keys() {
  static const std::set<std::string> keys = {"name", "description", "num_devices", "memory_per_device_bytes", "tasks"};
  return keys;
}

// The fields parse_table reads (the tables format, tables_io.hpp).
const std::set<std::string>& known_table_keys() {
  static const std::set<std::string> keys = {"name",          "rows",           "num_embeddings", "dim",
                                             "embedding_dim", "pooling_factor", "reuse_hist",     "dtype"};
  return keys;
}

void note_unknown_keys(const nlohmann::json& obj, const std::set<std::string>& known, std::string_view what,
                       std::set<std::string>& unknown) {
  for (const auto& item : obj.items()) {
    if (known.count(item.key()) == 0) unknown.insert(fmt::format("{} field \"{}\"", what, item.key()));
  }
}

ShardingTask parse_task(const nlohmann::json& value, std::string_view source, const std::string& path,
                        std::set<std::string>& unknown) {
  read_object(value, source, path);
  note_unknown_keys(value, {"tables"}, "task", unknown);
  const nlohmann::json& list = read_array(require_member(value, "tables", source, path), source, path + ".tables");
  if (list.empty()) throw_field_error(source, path + ".tables", "must hold at least one table", list);
  ShardingTask task;
  std::unordered_map<std::string, std::size_t> first_index;
  for (std::size_t j = 0; j < list.size(); ++j) {
    std::string table_path = fmt::format("{}.tables[{}]", path, j);
    task.tables.push_back(parse_table(list[j], source, table_path, j));
    note_unknown_keys(list[j], known_table_keys(), "table", unknown);
    auto [it, inserted] = first_index.emplace(task.tables.back().name, j);
    if (!inserted) {
      throw InputError(fmt::format("{}: {}.name: duplicate name \"{}\" (also {}.tables[{}])", source, table_path,
                                   task.tables.back().name, path, it->second));
    }
  }
  return task;
}

}  // namespace

Cluster TaskSet::cluster() const {
  Cluster cluster;
  cluster.num_devices = num_devices;
  cluster.memory_per_device_bytes = memory_per_device_bytes;
  return cluster;
}

TaskSet parse_task_set(const nlohmann::json& doc, std::string_view source) {
  if (!doc.is_object()) {
    throw InputError(
        fmt::format("{}: expected a task set object {{\"name\", \"num_devices\", "
                    "\"memory_per_device_bytes\", \"tasks\"}}, got {}",
                    source, describe_json_value(doc)));
  }
  std::set<std::string> unknown;
  note_unknown_keys(doc, known_set_keys(), "task set", unknown);
  TaskSet set;
  set.name = read_string(require_member(doc, "name", source, ""), source, "name");
  if (set.name.empty()) throw_field_error(source, "name", "must not be empty", doc["name"]);
  if (const auto* description = find_member(doc, "description")) {
    set.description = read_string(*description, source, "description");
  }
  set.num_devices = static_cast<int>(
      read_int64(require_member(doc, "num_devices", source, ""), source, "num_devices", 1, kMaxDevices));
  set.memory_per_device_bytes = read_int64(require_member(doc, "memory_per_device_bytes", source, ""), source,
                                           "memory_per_device_bytes", 1, std::numeric_limits<int64_t>::max());
  const nlohmann::json& tasks = read_array(require_member(doc, "tasks", source, ""), source, "tasks");
  if (tasks.empty()) throw_field_error(source, "tasks", "must hold at least one task", tasks);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    set.tasks.push_back(parse_task(tasks[i], source, fmt::format("tasks[{}]", i), unknown));
  }
  for (const auto& key : unknown) spdlog::warn("{}: ignoring unknown {}", source, key);
  return set;
}

TaskSet load_task_set(const std::string& path) { return parse_task_set(read_json_file(path), path); }

nlohmann::ordered_json task_set_to_json(const TaskSet& set) {
  nlohmann::ordered_json doc = {{"name", set.name}};
  if (!set.description.empty()) doc["description"] = set.description;
  doc["num_devices"] = set.num_devices;
  doc["memory_per_device_bytes"] = set.memory_per_device_bytes;
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
  for (const auto& task : set.tasks) tasks.push_back({{"tables", rounded_tables_json(task.tables)}});
  doc["tasks"] = std::move(tasks);
  return doc;
}

std::string format_task_set(const TaskSet& set) { return dump_readable(task_set_to_json(set)) + "\n"; }

}  // namespace shardplan
