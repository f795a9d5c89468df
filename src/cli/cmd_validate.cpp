// shard-plan validate --plan P --tables T: an independent check of any plan in the shard-plan/1 format.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/plan_moves.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/core/validate.hpp"

namespace shardplan::cli {

namespace {

// A replan's claims ("replan" in the plan file) against the bytes the two plans differ by, recomputed
// here from the files alone; each mismatch, and bytes moved past the claimed budget, is a problem.
std::vector<std::string> check_replan(const nlohmann::json& doc, const PlanMoves& moves) {
  std::vector<std::string> problems;
  const auto replan = doc.find("replan");
  if (replan == doc.end() || !replan->is_object()) return problems;
  auto claim = [&](const char* key, int64_t actual) {
    const auto value = replan->find(key);
    if (value == replan->end() || !value->is_number_integer()) {
      problems.push_back(fmt::format("replan.{}: missing or not an integer", key));
    } else if (value->get<int64_t>() != actual) {
      problems.push_back(
          fmt::format("replan.{}: claims {} bytes, the plans differ by {}", key, value->get<int64_t>(), actual));
    }
  };
  claim("moved_bytes", moves.moved_bytes);
  claim("rebuilt_bytes", moves.rebuilt_bytes);
  claim("added_bytes", moves.added_bytes);
  const auto budget = replan->find("move_budget_bytes");
  if (budget == replan->end() || !budget->is_number_integer()) {
    problems.push_back("replan.move_budget_bytes: missing or not an integer");
  } else if (moves.moved_bytes > budget->get<int64_t>()) {
    problems.push_back(
        fmt::format("replan: moves {} bytes, over its budget of {} bytes", moves.moved_bytes, budget->get<int64_t>()));
  }
  return problems;
}

int run_validate(int argc, char** argv) {
  CLI::App app{
      "Checks a plan against its tables: every table covered exactly once (no gaps, no overlap), ranks in "
      "range, placements matching ranks, no device over its usable memory.",
      "shard-plan validate"};
  configure_app(app);
  app.footer(R"(Example:
  shard-plan validate --plan plan.json --tables data/examples/tables.json

  shard-plan validate --plan new.json --tables tables.json --from old.json   (a replan's moves and budget)

Exit codes: 0 valid, 1 invalid (every problem is listed), 2 bad usage or unreadable input.)");
  std::string plan_path;
  std::string tables_path;
  std::string old_plan_path;
  LogOptions log_options;
  app.add_option("--plan", plan_path, "Plan file (format shard-plan/1)")->required();
  app.add_option("--tables", tables_path, "The tables file the plan was made for")->required();
  app.add_option("--from", old_plan_path,
                 "The old plan a replan started from: recompute the bytes it moved and check them against the "
                 "budget and figures the plan records")
      ->type_name("OLD_PLAN");
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);

  std::vector<Table> tables = load_tables(tables_path);
  nlohmann::json plan = read_json_file(plan_path);
  ValidationResult result = validate_plan_json(plan, tables, plan_path);
  if (result.valid() && !old_plan_path.empty()) {
    const Plan old_plan = read_plan_file_alone(old_plan_path);
    const Plan new_plan = plan_from_json(plan, tables, plan_path);
    const PlanMoves moves = plan_moves(old_plan, new_plan, new_plan.cluster.optimizer);
    fmt::print("from {}: moved {} ({} bytes), rebuilt {}, added {}; {} tables kept in place, {} dropped\n",
               old_plan_path, format_bytes(moves.moved_bytes), moves.moved_bytes, format_bytes(moves.rebuilt_bytes),
               format_bytes(moves.added_bytes), moves.kept_tables, moves.dropped.size());
    result.problems = check_replan(plan, moves);
  }
  if (result.valid()) {
    fmt::print("{}: valid ({} tables)\n", plan_path, tables.size());
    return 0;
  }
  fmt::print("{}: INVALID, {} problem{}:\n", plan_path, result.problems.size(), result.problems.size() == 1 ? "" : "s");
  for (const auto& problem : result.problems) fmt::print("  - {}\n", problem);
  return 1;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(validate, "validate", "check a plan independently against its tables", run_validate);

}  // namespace shardplan::cli
