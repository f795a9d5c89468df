#pragma once
// What a replan did, for the report: the old placement's cost under the new tables against the new plan's,
// the bytes moved against the budget, and the largest moves.
#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/core/replan_summary.hpp"
#include "shardplan/report/evaluate.hpp"

namespace shardplan {

std::string format_replan(const ReplanSummary& replan, double new_max_ms);

// `evaluate --from`: the old placement under the plan's tables (`old`) and the plan (`now`) side by side,
// per device and in summary, with what the plan moved from it.
std::string format_side_by_side(const PlanEvaluation& old, const PlanEvaluation& now, const PlanMoves& moves);
nlohmann::ordered_json side_by_side_to_json(const PlanEvaluation& old, const PlanMoves& moves);

}  // namespace shardplan
