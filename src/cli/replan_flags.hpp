#pragma once
// plan --from OLD_PLAN --move-budget SIZE|PCT: replanning's flags (search/replan.hpp does the work).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan::cli {

inline constexpr const char* kDefaultMoveBudget = "10%";

struct ReplanFlags {
  std::string from;
  std::string move_budget;  // empty: kDefaultMoveBudget, when --from is given
  bool keep_shapes = false;
};

void add_replan_options(CLI::App& app, ReplanFlags& flags);

// Refuses --move-budget and --keep-shapes without --from, and --from with another planner than `default_algorithm` or
// with measured-in-the-loop planning. Throws InputError naming the flag.
void check_replan_flags(const ReplanFlags& flags, const std::string& algorithm, const std::string& default_algorithm,
                        bool measuring);

// "10%" of the tables' bytes (weights and optimizer state), or a size ("64GiB", "0"). Throws InputError
// naming --move-budget and the text.
int64_t move_budget_bytes(const std::string& text, const std::vector<Table>& tables, Optimizer optimizer);

}  // namespace shardplan::cli
