#pragma once
// An independent plan checker. It reads the plan JSON itself (not the planner's data structures), so a
// bug in plan construction or serialisation cannot hide from it.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// Above this many shards in one table the validator refuses the plan (a bound on hostile files; its
// overlap check is O(n log n)), so the planner makes row-wise and data-parallel tables, a shard per GPU,
// only up to this many GPUs.
inline constexpr std::size_t kMaxShardsPerTable = std::size_t{1} << 20;

struct ValidationResult {
  std::vector<std::string> problems;  // empty when the plan is valid
  bool valid() const { return problems.empty(); }
};

// Checks that every table is covered exactly once (no gaps, no overlap), shapes match the tables, ranks
// are in range, `ranks` and `placement` agree with the shards, and no device exceeds its usable memory.
// Structural errors (missing fields, wrong types) throw InputError naming `source` and the JSON path;
// semantic problems are collected in the result.
ValidationResult validate_plan_json(const nlohmann::json& plan, const std::vector<Table>& tables,
                                    std::string_view source);

}  // namespace shardplan
