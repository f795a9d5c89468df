#pragma once
// Reads plan files ("shard-plan/1", README: "Plan format") written by shard-plan or by any other tool,
// so they can be scored and measured (`shard-plan evaluate`).
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/plan.hpp"

namespace shardplan {

// The cluster a plan names (num_devices, devices_per_host, memory, reserve, optimizer). Throws InputError
// naming `source` and the field.
Cluster plan_cluster_from_json(const nlohmann::json& plan, std::string_view source);

// The plan, checked by validate_plan_json first: an invalid plan throws InputError listing its problems.
// Tables come out in the tables file's order; shards keep the plan's order. Costs the file carries are
// not read (they are the writer's predictions; score the plan again).
Plan plan_from_json(const nlohmann::json& plan, const std::vector<Table>& tables, std::string_view source);

Plan read_plan_file(const std::string& path, const std::vector<Table>& tables);

// A plan read without its tables file (replanning from it): each table's name, rows, dim and dtype as
// the plan states them; no pooling factors, so it can be compared but not scored. Checked as any plan is.
Plan read_plan_file_alone(const std::string& path);

// Another program's plan (TorchRec's planner, through the Python package): its header and shards, with no
// per-device summary of its own. The plan is completed with shard-plan's (plan_to_json) and that is checked
// by validate_plan_json, as a plan file is. Throws InputError naming the field, or listing the problems.
Plan plan_from_program_json(const nlohmann::json& plan, const std::vector<Table>& tables, std::string_view source);

}  // namespace shardplan
