#pragma once
// Facts recorded with every measurement, so data can be traced to where and when it was taken.
#include <nlohmann/json.hpp>
#include <string>

namespace shardplan {

std::string utc_now();    // "2026-11-21T09:36:57Z"
std::string host_name();  // "unknown" when unavailable
// The 1-minute load average now (null when unavailable): on a shared machine, other work inflates timings.
nlohmann::json load_average();

}  // namespace shardplan
