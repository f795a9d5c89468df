#pragma once
// Which sharding types a plan may use (`--sharding-types`). No JSON, no LibTorch.
#include <string>
#include <string_view>

#include "shardplan/plan.hpp"

namespace shardplan {

struct ShardingTypeSet {
  unsigned bits = 0;

  static ShardingTypeSet all();
  static ShardingTypeSet table_and_column();  // what the NeuroShard search itself makes
  bool allows(ShardingType type) const { return (bits >> static_cast<unsigned>(type)) & 1u; }
  void add(ShardingType type) { bits |= 1u << static_cast<unsigned>(type); }
  // Whether a plan may use row-wise, table-row-wise or data-parallel shards.
  bool beyond_table_and_column() const { return (bits & ~table_and_column().bits) != 0; }
};

// "table_wise,column_wise,row_wise" (TorchRec's names, any order) or "all". Throws InputError naming
// `field` and the value for an unknown or repeated name, an empty list, or one without table_wise (the
// search places tables whole or in column slices first, and converts tables from there).
ShardingTypeSet parse_sharding_types(std::string_view list, std::string_view field);

// The set's names in the enum's order, comma-separated.
std::string sharding_types_string(ShardingTypeSet set);

}  // namespace shardplan
