#pragma once
// What the report says of a plan's tables kept in host memory behind an HBM cache.
#include <vector>

#include "shardplan/core/plan.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/report/report.hpp"

namespace shardplan {

// The plan's cached tables, each as its largest block sees the cache under `model`'s batch; empty
// without any.
std::vector<CachedTableReport> describe_cached_tables(const Plan& plan, const std::vector<Table>& tables,
                                                      const CostModel& model);

}  // namespace shardplan
