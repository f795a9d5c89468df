#include "shardplan/core/sharding_types.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>

#include "shardplan/core/errors.hpp"

namespace shardplan {

std::string_view sharding_type_name(ShardingType type) {
  switch (type) {
    case ShardingType::kColumnWise:
      return "column_wise";
    case ShardingType::kRowWise:
      return "row_wise";
    case ShardingType::kTableRowWise:
      return "table_row_wise";
    case ShardingType::kDataParallel:
      return "data_parallel";
    case ShardingType::kTableWise:
      break;
  }
  return "table_wise";
}

std::optional<ShardingType> parse_sharding_type(std::string_view name) {
  for (int i = 0; i < kNumShardingTypes; ++i) {
    auto type = static_cast<ShardingType>(i);
    if (sharding_type_name(type) == name) return type;
  }
  return std::nullopt;
}

ShardingTypeSet ShardingTypeSet::all() { return ShardingTypeSet{(1u << kNumShardingTypes) - 1u}; }

ShardingTypeSet ShardingTypeSet::table_and_column() {
  ShardingTypeSet set;
  set.add(ShardingType::kTableWise);
  set.add(ShardingType::kColumnWise);
  return set;
}

ShardingTypeSet parse_sharding_types(std::string_view list, std::string_view field) {
  if (list == "all") return ShardingTypeSet::all();
  ShardingTypeSet set;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view name = list.substr(start, end - start);
    auto type = parse_sharding_type(name);
    if (!type) {
      throw InputError(
          fmt::format("{}: unknown sharding type \"{}\" in \"{}\" (expected a comma-separated list of "
                      "table_wise, column_wise, row_wise, table_row_wise, data_parallel, or all)",
                      field, name, list));
    }
    if (set.allows(*type)) throw InputError(fmt::format("{}: \"{}\" is listed twice in \"{}\"", field, name, list));
    set.add(*type);
    start = end + 1;
  }
  if (!set.allows(ShardingType::kTableWise)) {
    throw InputError(
        fmt::format("{}: must include table_wise, got \"{}\" (the search places tables whole or in column "
                    "slices, then converts tables to the other types where the cost model says so)",
                    field, list));
  }
  return set;
}

std::string sharding_types_string(ShardingTypeSet set) {
  std::string out;
  for (int i = 0; i < kNumShardingTypes; ++i) {
    auto type = static_cast<ShardingType>(i);
    if (!set.allows(type)) continue;
    if (!out.empty()) out += ',';
    out += sharding_type_name(type);
  }
  return out;
}

ShardingTypeSet table_sharding_types(const Table& table, ShardingTypeSet allowed) {
  const ShardingTypeSet own = table.constraints.sharding_types;
  return own.empty() ? allowed : own & allowed;
}

const Table* first_table_without(const std::vector<Table>& tables, ShardingTypeSet allowed, ShardingTypeSet wanted) {
  for (const Table& table : tables) {
    if ((table_sharding_types(table, allowed) & wanted).empty()) return &table;
  }
  return nullptr;
}

void check_table_constraints(const std::vector<Table>& tables, int num_devices, ShardingTypeSet allowed) {
  for (const Table& table : tables) {
    const TableConstraints& c = table.constraints;
    if (!c.ranks.empty() && c.ranks.back() >= num_devices) {
      throw InputError(fmt::format("table \"{}\": ranks: rank {} is not a device (the cluster has {}: ranks 0 to {})",
                                   table.name, c.ranks.back(), num_devices, num_devices - 1));
    }
    if (table_sharding_types(table, allowed).empty()) {
      throw InputError(
          fmt::format("table \"{}\": sharding_types: none of \"{}\" is among the types the plan allows "
                      "(\"{}\")",
                      table.name, sharding_types_string(c.sharding_types), sharding_types_string(allowed)));
    }
  }
}

std::string constraint_violation(const Plan& plan, const std::vector<Table>& tables) {
  std::unordered_map<std::string_view, const Table*> by_name;
  for (const Table& table : tables) {
    if (table.constraints.any()) by_name.emplace(table.name, &table);
  }
  if (by_name.empty()) return {};
  for (const TableSharding& sharding : plan.tables) {
    const auto found = by_name.find(sharding.name);
    if (found == by_name.end()) continue;
    const TableConstraints& c = found->second->constraints;
    if (!c.sharding_types.empty() && !c.sharding_types.allows(sharding.type)) {
      return fmt::format("table \"{}\" is {}, but may only be {}", sharding.name, sharding_type_name(sharding.type),
                         sharding_types_string(c.sharding_types));
    }
    for (const Shard& shard : sharding.shards) {
      if (!c.allows_rank(shard.rank)) {
        return fmt::format("table \"{}\" has a shard on rank {}, off its ranks [{}]", sharding.name, shard.rank,
                           fmt::join(c.ranks, ", "));
      }
    }
  }
  return {};
}

}  // namespace shardplan
