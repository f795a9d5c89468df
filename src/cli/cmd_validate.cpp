// shard-plan validate --plan P --tables T: an independent check of any plan in the shard-plan/1 format.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/validate.hpp"

namespace shardplan::cli {

namespace {

int run_validate(int argc, char** argv) {
  CLI::App app{
      "Checks a plan against its tables: every table covered exactly once (no gaps, no overlap), ranks in "
      "range, placements matching ranks, no device over its usable memory.",
      "shard-plan validate"};
  configure_app(app);
  app.footer(R"(Example:
  shard-plan validate --plan plan.json --tables data/examples/tables.json

Exit codes: 0 valid, 1 invalid (every problem is listed), 2 bad usage or unreadable input.)");
  std::string plan_path;
  std::string tables_path;
  LogOptions log_options;
  app.add_option("--plan", plan_path, "Plan file (format shard-plan/1)")->required();
  app.add_option("--tables", tables_path, "The tables file the plan was made for")->required();
  add_log_options(app, log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(log_options);

  std::vector<Table> tables = load_tables(tables_path);
  nlohmann::json plan = read_json_file(plan_path);
  ValidationResult result = validate_plan_json(plan, tables, plan_path);
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
