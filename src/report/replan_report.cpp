#include "shardplan/report/replan_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

constexpr std::size_t kMovesListed = 8;

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "-";
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

}  // namespace

std::string format_replan(const ReplanSummary& replan, double new_max_ms) {
  const PlanMoves& c = replan.changes;
  const double change = replan.old_max_total_ms > 0 ? 100.0 * (new_max_ms / replan.old_max_total_ms - 1.0) : 0.0;
  std::string out =
      fmt::format("replan from {}: the old placement under these tables {:.3f} ms, this plan {:.3f} ms ({:+.1f}%)\n",
                  replan.from, replan.old_max_total_ms, new_max_ms, change);
  out += fmt::format("moved: {} of a {} budget, {} move{}{}; {} table{} kept in place\n", format_bytes(c.moved_bytes),
                     format_bytes(replan.move_budget_bytes), replan.moves, replan.moves == 1 ? "" : "s",
                     replan.type_pass_moves > 0
                         ? fmt::format(", then the sharding-type pass (up to {} changes)", replan.type_pass_moves)
                         : "",
                     c.kept_tables, c.kept_tables == 1 ? "" : "s");
  const auto count = [&](TableChange kind) {
    return std::count_if(c.tables.begin(), c.tables.end(), [&](const TableMove& m) { return m.change == kind; });
  };
  out += fmt::format("changed tables: {} rebuilt ({}), {} added ({}), {} dropped\n", count(TableChange::kRebuilt),
                     format_bytes(c.rebuilt_bytes), count(TableChange::kAdded), format_bytes(c.added_bytes),
                     c.dropped.size());
  std::vector<const TableMove*> moved;
  for (const TableMove& m : c.tables) {
    if (m.change == TableChange::kMoved) moved.push_back(&m);
  }
  std::stable_sort(moved.begin(), moved.end(),
                   [](const TableMove* a, const TableMove* b) { return a->bytes > b->bytes; });
  for (std::size_t i = 0; i < moved.size() && i < kMovesListed; ++i) {
    out += fmt::format("  moved {}: ranks {} -> {} ({})\n", moved[i]->table, ranks_text(moved[i]->from),
                       ranks_text(moved[i]->to), format_bytes(moved[i]->bytes));
  }
  if (moved.size() > kMovesListed)
    out += fmt::format("  ... and {} more (the plan file lists all)\n", moved.size() - kMovesListed);
  return out;
}

std::string format_side_by_side(const PlanEvaluation& old, const PlanEvaluation& now, const PlanMoves& moves) {
  std::string out = fmt::format("{:>6} {:>12} {:>12} {:>12} {:>12}\n", "rank", "old compute", "old total",
                                "new compute", "new total");
  for (std::size_t r = 0; r < now.devices.size() && r < old.devices.size(); ++r) {
    out += fmt::format("{:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}\n", r, old.devices[r].predicted.compute_ms,
                       old.devices[r].predicted.total_ms(), now.devices[r].predicted.compute_ms,
                       now.devices[r].predicted.total_ms());
  }
  const double change = old.predicted.max_ms > 0 ? 100.0 * (now.predicted.max_ms / old.predicted.max_ms - 1.0) : 0.0;
  out += fmt::format("max: the old placement {:.3f} ms (rank {}), this plan {:.3f} ms (rank {}), {:+.1f}%\n",
                     old.predicted.max_ms, old.predicted.slowest, now.predicted.max_ms, now.predicted.slowest, change);
  out += fmt::format("moved from it: {}; rebuilt {}, added {}; {} tables kept in place, {} dropped\n",
                     format_bytes(moves.moved_bytes), format_bytes(moves.rebuilt_bytes),
                     format_bytes(moves.added_bytes), moves.kept_tables, moves.dropped.size());
  return out;
}

nlohmann::ordered_json side_by_side_to_json(const PlanEvaluation& old, const PlanMoves& moves) {
  return nlohmann::ordered_json{{"evaluation", evaluation_to_json(old)}, {"moved_bytes", moves.moved_bytes},
                                {"rebuilt_bytes", moves.rebuilt_bytes},  {"added_bytes", moves.added_bytes},
                                {"kept_tables", moves.kept_tables},      {"dropped_tables", moves.dropped}};
}

}  // namespace shardplan
