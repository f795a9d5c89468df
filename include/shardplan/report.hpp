#pragma once
// The human-readable per-device report printed after planning.
#include <string>

#include "shardplan/plan.hpp"

namespace shardplan {

struct ReportOptions {
  bool full = false;       // one row per device, however many
  int max_rows = 32;       // above this many devices, show the heaviest and lightest rows only
};

std::string format_report(const Plan& plan, const ReportOptions& options);

}  // namespace shardplan
