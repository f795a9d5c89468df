#pragma once
// Which sharding types a plan may use (`--sharding-types`). No JSON, no LibTorch.
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/plan.hpp"

namespace shardplan {

// "table_wise,column_wise,row_wise" (TorchRec's names, any order) or "all". Throws InputError naming
// `field` and the value for an unknown or repeated name, an empty list, or one without table_wise (the
// search places tables whole or in column slices first, and converts tables from there).
ShardingTypeSet parse_sharding_types(std::string_view list, std::string_view field);

// The set's names in the enum's order, comma-separated.
std::string sharding_types_string(ShardingTypeSet set);

// The types `table` may take in a plan that allows `allowed`: the types both allow.
ShardingTypeSet table_sharding_types(const Table& table, ShardingTypeSet allowed);

// The first table that may take none of `wanted` in a plan that allows `allowed`; null when none.
const Table* first_table_without(const std::vector<Table>& tables, ShardingTypeSet allowed, ShardingTypeSet wanted);

// Checks the tables' constraints against a cluster of `num_devices` and the plan's allowed types: every
// pinned rank is a device and every table keeps a type it may take. Throws InputError naming the table,
// the field and the value.
void check_table_constraints(const std::vector<Table>& tables, int num_devices, ShardingTypeSet allowed);

// The first way `plan` breaks its tables' constraints (a type a table may not take, a shard off its
// pinned ranks) as a sentence; empty when it honours them all. Plan tables are matched by name.
std::string constraint_violation(const Plan& plan, const std::vector<Table>& tables);

}  // namespace shardplan
