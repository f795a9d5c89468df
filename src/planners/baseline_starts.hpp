#pragma once
// "neuroshard" as users run it: the search, and the baselines' plans as other starting points. Every
// in-process baseline whose plan uses only the allowed sharding types plans the same tables; its plan,
// after the search's sharding-type pass, is scored with the search's model beside the search's own, and
// the lowest predicted cost wins (ties: the search's). So the planner is never worse, under its own
// model, than a baseline, and plans whatever a baseline can plan: a table that fits no GPU table- or
// column-wise, which the search refuses, comes back row-wise from TorchRec's all-types proposals. The
// plan says which start it came from (SearchSummary::started_from). At scale the baselines whose
// proposals cost more than the search (TorchRec's all-types from 2^16 tables x GPUs, torchrec_cw32 from
// 2^20) run only when the search finds no plan.
#include <memory>

#include "shardplan/planners/planner.hpp"

namespace shardplan {

std::unique_ptr<Planner> make_baseline_checked_planner(std::unique_ptr<Planner> search, const PlannerConfig& config);

}  // namespace shardplan
