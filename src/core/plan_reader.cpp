#include "shardplan/plan_reader.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "shardplan/errors.hpp"
#include "shardplan/json_fields.hpp"
#include "shardplan/json_file.hpp"
#include "shardplan/plan_io.hpp"
#include "shardplan/validate.hpp"

namespace shardplan {

namespace {

// Problems listed in the error before "and N more".
constexpr std::size_t kProblemsShown = 5;

Shard read_shard(const nlohmann::json& entry) {
  const auto& offsets = entry.at("shard_offsets");
  const auto& sizes = entry.at("shard_sizes");
  return Shard{static_cast<int>(*json_as_int64(entry.at("rank"))), *json_as_int64(offsets[0]),
               *json_as_int64(offsets[1]), *json_as_int64(sizes[0]), *json_as_int64(sizes[1])};
}

}  // namespace

Cluster plan_cluster_from_json(const nlohmann::json& plan, std::string_view source) {
  if (!plan.is_object()) throw_field_error(source, "(top level)", "a plan must be a JSON object", plan);
  // Required: without it any JSON object with the right fields would pass for a plan.
  const auto& format = require_member(plan, "format", source, "");
  if (read_string(format, source, "format") != kPlanFormat) {
    throw_field_error(source, "format", fmt::format("unsupported plan format (expected \"{}\")", kPlanFormat), format);
  }
  Cluster cluster;
  cluster.num_devices =
      static_cast<int>(read_int64(require_member(plan, "num_devices", source, ""), source, "num_devices", 1, kMaxDevices));
  if (const auto* k = find_member(plan, "devices_per_host")) {
    cluster.devices_per_host = static_cast<int>(read_int64(*k, source, "devices_per_host", 1, kMaxDevices));
  }
  if (const auto* hardware = find_member(plan, "hardware")) cluster.hardware = read_string(*hardware, source, "hardware");
  cluster.memory_per_device_bytes = read_int64(require_member(plan, "memory_per_device_bytes", source, ""), source,
                                               "memory_per_device_bytes", 1, INT64_MAX);
  if (const auto* reserve = find_member(plan, "reserve_fraction")) {
    cluster.reserve_fraction = read_double(*reserve, source, "reserve_fraction", 0.0, 0.999999);
  }
  if (const auto* opt = find_member(plan, "optimizer")) {
    auto parsed = parse_optimizer(read_string(*opt, source, "optimizer"));
    if (!parsed) throw_field_error(source, "optimizer", "must be sgd, rowwise_adagrad, adagrad or adam", *opt);
    cluster.optimizer = *parsed;
  }
  return cluster;
}

Plan plan_from_json(const nlohmann::json& doc, const std::vector<Table>& tables, std::string_view source) {
  ValidationResult validation = validate_plan_json(doc, tables, source);
  if (!validation.valid()) {
    std::string message = fmt::format("{}: the plan is invalid for these tables ({} problem{}):", source,
                                      validation.problems.size(), validation.problems.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < validation.problems.size() && i < kProblemsShown; ++i) {
      message += "\n  - " + validation.problems[i];
    }
    if (validation.problems.size() > kProblemsShown) {
      message += fmt::format("\n  ... and {} more (shard-plan validate lists them all)",
                             validation.problems.size() - kProblemsShown);
    }
    throw InputError(message);
  }

  Plan plan;
  plan.cluster = plan_cluster_from_json(doc, source);
  if (const auto* algorithm = find_member(doc, "algorithm"); algorithm != nullptr && algorithm->is_string()) {
    plan.algorithm = algorithm->get<std::string>();
  } else {
    plan.algorithm = "unknown";
  }
  if (const auto* seed = find_member(doc, "seed"); seed != nullptr && seed->is_number_unsigned()) {
    plan.seed = seed->get<uint64_t>();
  }

  // Validation guarantees every plan entry names a distinct table of the file and is well formed.
  std::unordered_map<std::string, const nlohmann::json*> entries;
  for (const auto& entry : doc.at("tables")) entries.emplace(entry.at("name").get<std::string>(), &entry);
  for (const auto& table : tables) {
    const nlohmann::json& entry = *entries.at(table.name);
    std::vector<Shard> shards;
    for (const auto& shard : entry.at("shards")) shards.push_back(read_shard(shard));
    TableSharding sharding = sharding_of(table, std::move(shards));
    // The file's word (validate_plan_json has rejected unknown names): the shards alone cannot tell a
    // row-wise table on one rank, or a replica on one device, from a table-wise one.
    sharding.type = parse_sharding_type(entry.at("sharding_type").get<std::string>()).value_or(ShardingType::kTableWise);
    plan.tables.push_back(std::move(sharding));
  }
  return plan;
}

Plan read_plan_file(const std::string& path, const std::vector<Table>& tables) {
  return plan_from_json(read_json_file(path), tables, path);
}

}  // namespace shardplan
