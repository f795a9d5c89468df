#include "shardplan/sharding_types.hpp"

#include <fmt/format.h>

#include "shardplan/errors.hpp"

namespace shardplan {

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
      throw InputError(fmt::format("{}: unknown sharding type \"{}\" in \"{}\" (expected a comma-separated list of "
                                   "table_wise, column_wise, row_wise, table_row_wise, data_parallel, or all)",
                                   field, name, list));
    }
    if (set.allows(*type)) throw InputError(fmt::format("{}: \"{}\" is listed twice in \"{}\"", field, name, list));
    set.add(*type);
    start = end + 1;
  }
  if (!set.allows(ShardingType::kTableWise)) {
    throw InputError(fmt::format("{}: must include table_wise, got \"{}\" (the search places tables whole or in column "
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

}  // namespace shardplan
