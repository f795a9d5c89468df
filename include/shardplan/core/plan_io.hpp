#pragma once
// The plan file format "shard-plan/1" (docs/formats.md).
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "shardplan/core/plan.hpp"

namespace shardplan {

inline constexpr const char* kPlanFormat = "shard-plan/1";

// Keys keep the documented order (ordered_json).
nlohmann::ordered_json plan_to_json(const Plan& plan);

// Serialised plan text: deterministic for a given plan.
std::string plan_to_string(const Plan& plan);

// Writes the plan to `path` atomically, or to standard output for "-".
void write_plan(const Plan& plan, const std::string& path);

}  // namespace shardplan
