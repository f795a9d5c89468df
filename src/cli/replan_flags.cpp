#include "replan_flags.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/search/replan.hpp"

namespace shardplan::cli {

void add_replan_options(CLI::App& app, ReplanFlags& flags) {
  const char* group = "Replanning";
  app.add_option("--from", flags.from,
                 "Replan from this old plan: its tables stay where they are unless moving them lowers the predicted "
                 "cost enough per byte, within --move-budget; new and changed tables are placed, missing ones dropped")
      ->type_name("OLD_PLAN")
      ->group(group);
  app.add_option("--move-budget", flags.move_budget,
                 fmt::format("With --from: the bytes moves may take, weights and optimizer state counted: a size "
                             "(64GiB, 0) or a percentage of the tables' bytes (default {})",
                             kDefaultMoveBudget))
      ->type_name("SIZE|PCT")
      ->group(group);
  app.add_flag("--keep-shapes", flags.keep_shapes,
               "With --from: move the old plan's shards whole, never re-cut them or change a table's sharding type "
               "(what TorchRec's DistributedModelParallel.reshard applies)")
      ->group(group);
}

void check_replan_flags(const ReplanFlags& flags, const std::string& algorithm, const std::string& default_algorithm,
                        bool measuring) {
  if (flags.from.empty()) {
    if (!flags.move_budget.empty()) throw InputError("--move-budget: only a replan has a budget; add --from OLD_PLAN");
    if (flags.keep_shapes) throw InputError("--keep-shapes: only a replan keeps shapes; add --from OLD_PLAN");
    return;
  }
  move_budget_bytes(flags.move_budget, {}, Optimizer::kSgd);  // its text refused before any work
  if (measuring) throw InputError("--from: a replan does not measure while planning; leave out --measure-loop");
  if (algorithm != default_algorithm) {
    throw InputError(
        fmt::format("--from: replanning uses the {} cost model's search, not --algo {}", default_algorithm, algorithm));
  }
}

int64_t move_budget_bytes(const std::string& text, const std::vector<Table>& tables, Optimizer optimizer) {
  const std::string given = text.empty() ? kDefaultMoveBudget : text;
  // A size is at least a byte (parse_byte_size); a budget of nothing keeps the old placement.
  if (given == "0") return 0;
  if (given.back() != '%') return parse_byte_size(given, "--move-budget");
  const std::string number = given.substr(0, given.size() - 1);
  std::size_t used = 0;
  double percent = -1.0;
  try {
    percent = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != number.size() || number.empty() || !std::isfinite(percent) || percent < 0.0 || percent > 100.0) {
    throw InputError(
        fmt::format("--move-budget: a percentage must be a number in [0, 100] before '%', got '{}'", given));
  }
  return move_budget_from_percent(percent, tables, optimizer);
}

}  // namespace shardplan::cli
