#pragma once
// The plan as a chart for people (`plan --report FILE.svg`): per-device predicted cost, stacked compute,
// forward and backward all-to-all, above per-device memory against usable capacity. One self-contained
// SVG (no scripts, styles or fonts to fetch) that stays readable from a few devices to a few hundred.
#include <string>

#include "shardplan/core/plan.hpp"
#include "shardplan/report/report.hpp"

namespace shardplan {

std::string render_svg_report(const Plan& plan, const PlanAnalysis& analysis);

}  // namespace shardplan
