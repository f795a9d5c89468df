#include "shardplan/core/plan_reader.hpp"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/validate.hpp"

namespace shardplan {

namespace {

// Problems listed in the error before "and N more".
constexpr std::size_t kProblemsShown = 5;

Shard read_shard(const nlohmann::json& entry, std::string_view source, const std::string& path) {
  read_object(entry, source, path);
  auto pair = [&](const char* key) {
    const auto& value = read_array(require_member(entry, key, source, path), source, path + "." + key);
    if (value.size() != 2) throw InputError(fmt::format("{}: {}.{}: must be a [row, column] pair", source, path, key));
    return std::make_pair(read_int64(value[0], source, path + "." + key + "[0]", 0, INT64_MAX),
                          read_int64(value[1], source, path + "." + key + "[1]", 0, INT64_MAX));
  };
  const auto [row0, col0] = pair("shard_offsets");
  const auto [rows, cols] = pair("shard_sizes");
  const auto rank = read_int64(require_member(entry, "rank", source, path), source, path + ".rank", 0, kMaxDevices - 1);
  return Shard{static_cast<int>(rank), row0, col0, rows, cols};
}

// A table's kernel: "fused_uvm_caching" carries its cache's load factor (cache_params); the others none.
// The validator checks the kernel against the sharding type; here only what the plan needs is read.
std::optional<CacheParams> read_cache(const nlohmann::json& entry, std::string_view source, const std::string& path) {
  const auto* kernel = find_member(entry, "compute_kernel");
  if (kernel == nullptr || read_string(*kernel, source, path + ".compute_kernel") != "fused_uvm_caching") {
    return std::nullopt;
  }
  const auto& params = read_object(require_member(entry, "cache_params", source, path), source, path + ".cache_params");
  if (const auto* algorithm = find_member(params, "algorithm")) {
    const std::string name = read_string(*algorithm, source, path + ".cache_params.algorithm");
    if (name != "LRU") {
      throw_field_error(source, path + ".cache_params.algorithm",
                        "must be \"LRU\" (shard-plan plans FBGEMM's LRU cache only)", *algorithm);
    }
  }
  // Its rule is the validator's (load_factor_problem), which every plan read passes through.
  const double load_factor = read_double(require_member(params, "load_factor", source, path + ".cache_params"), source,
                                         path + ".cache_params.load_factor", std::numeric_limits<double>::lowest(),
                                         std::numeric_limits<double>::max());
  return CacheParams{load_factor};
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
  cluster.num_devices = static_cast<int>(
      read_int64(require_member(plan, "num_devices", source, ""), source, "num_devices", 1, kMaxDevices));
  if (const auto* k = find_member(plan, "devices_per_host")) {
    cluster.devices_per_host = static_cast<int>(read_int64(*k, source, "devices_per_host", 1, kMaxDevices));
  }
  if (const auto* hardware = find_member(plan, "hardware"))
    cluster.hardware = read_string(*hardware, source, "hardware");
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
  if (const auto* ddr = find_member(plan, "ddr_per_host_bytes"))
    cluster.ddr_per_host_bytes = read_int64(*ddr, source, "ddr_per_host_bytes", 0, INT64_MAX);
  if (const auto* link = find_member(plan, "host_link_GBps"))
    cluster.host_link_gb_per_s = read_double(*link, source, "host_link_GBps", kMinHostLinkGBps, kMaxHostLinkGBps);
  return cluster;
}

namespace {

void throw_if_invalid(const ValidationResult& validation, std::string_view source) {
  if (validation.valid()) return;
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

// The plan's header and every table's shards, in the tables file's order. Each field is read with its
// checks, so a file nobody validated yet fails with InputError naming it, never with a crash.
Plan assemble_plan(const nlohmann::json& doc, const std::vector<Table>& tables, std::string_view source) {
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
  std::unordered_map<std::string, std::pair<const nlohmann::json*, std::string>> entries;
  const auto& list = read_array(require_member(doc, "tables", source, ""), source, "tables");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("tables[{}]", i);
    read_object(list[i], source, path);
    entries.emplace(read_string(require_member(list[i], "name", source, path), source, path + ".name"),
                    std::make_pair(&list[i], path));
  }
  for (const auto& table : tables) {
    const auto found = entries.find(table.name);
    if (found == entries.end())
      throw InputError(fmt::format("{}: table \"{}\" is not in the plan", source, table.name));
    const auto& [entry, path] = found->second;
    std::vector<Shard> shards;
    const auto& list_of_shards = read_array(require_member(*entry, "shards", source, path), source, path + ".shards");
    for (std::size_t k = 0; k < list_of_shards.size(); ++k) {
      shards.push_back(read_shard(list_of_shards[k], source, fmt::format("{}.shards[{}]", path, k)));
    }
    TableSharding sharding = sharding_of(table, std::move(shards));
    // The file's word: the shards alone cannot tell a row-wise table on one rank, or a replica on one
    // device, from a table-wise one.
    const std::string type =
        read_string(require_member(*entry, "sharding_type", source, path), source, path + ".sharding_type");
    const auto parsed = parse_sharding_type(type);
    if (!parsed) throw InputError(fmt::format("{}: {}.sharding_type: unknown \"{}\"", source, path, type));
    sharding.type = *parsed;
    sharding.cache = read_cache(*entry, source, path);
    plan.tables.push_back(std::move(sharding));
  }
  return plan;
}

}  // namespace

Plan plan_from_json(const nlohmann::json& doc, const std::vector<Table>& tables, std::string_view source) {
  throw_if_invalid(validate_plan_json(doc, tables, source), source);
  return assemble_plan(doc, tables, source);
}

Plan plan_from_program_json(const nlohmann::json& doc, const std::vector<Table>& tables, std::string_view source) {
  Plan plan = assemble_plan(doc, tables, source);
  // The program's shards with shard-plan's own per-device summary, checked as any plan file is.
  throw_if_invalid(validate_plan_json(plan_to_json(plan), tables, source), source);
  return plan;
}

Plan read_plan_file(const std::string& path, const std::vector<Table>& tables) {
  return plan_from_json(read_json_file(path), tables, path);
}

Plan read_plan_file_alone(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  if (!doc.is_object()) throw_field_error(path, "(top level)", "a plan must be a JSON object", doc);
  std::vector<Table> tables;
  const auto& list = read_array(require_member(doc, "tables", path, ""), path, "tables");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("tables[{}]", i);
    read_object(list[i], path, at);
    Table table;
    table.name = read_string(require_member(list[i], "name", path, at), path, at + ".name");
    table.rows = read_int64(require_member(list[i], "rows", path, at), path, at + ".rows", 1, kMaxRows);
    table.dim = static_cast<int>(read_int64(require_member(list[i], "dim", path, at), path, at + ".dim", 1, kMaxDim));
    if (const auto* dtype = find_member(list[i], "dtype")) {
      const auto parsed = parse_dtype(read_string(*dtype, path, at + ".dtype"));
      if (!parsed) throw_field_error(path, at + ".dtype", "must be fp32 or fp16", *dtype);
      table.dtype = *parsed;
    }
    tables.push_back(std::move(table));
  }
  return plan_from_json(doc, tables, path);
}

}  // namespace shardplan
