#pragma once
// What a replan (`plan --from OLD_PLAN`) changed, as its plan records it (plan_moves.hpp computes it).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

enum class TableChange {
  kKept,     // every shard where the old plan had it
  kMoved,    // same shape, some shards elsewhere: the bytes of those shards move (reshard)
  kRebuilt,  // rows, dim or dtype changed: every shard is built anew
  kAdded,    // not in the old plan
};
std::string_view table_change_name(TableChange change);  // "kept", "moved", "rebuilt", "added"
std::optional<TableChange> parse_table_change(std::string_view name);

struct TableMove {
  std::string table;
  TableChange change = TableChange::kKept;
  std::vector<int> from;  // the old plan's ranks of the table (none when added)
  std::vector<int> to;    // the new plan's
  int64_t bytes = 0;      // moved: the shards not where they were; rebuilt and added: all of them
};

struct PlanMoves {
  std::vector<TableMove> tables;     // every table of the new plan but the kept ones, in its order
  std::vector<std::string> dropped;  // tables of the old plan the new one lacks, in the old order
  int64_t moved_bytes = 0;           // what a move budget bounds
  int64_t rebuilt_bytes = 0;
  int64_t added_bytes = 0;
  int kept_tables = 0;
};

// What a replan did, as its plan file records it ("replan"; docs/formats.md).
struct ReplanSummary {
  std::string from;               // the old plan file as given
  int64_t move_budget_bytes = 0;  // what moved_bytes may reach
  double old_max_total_ms = 0.0;  // the old placement under the new tables (new tables placed, room made)
  int moves = 0;                  // shard moves, swaps and splits: chosen, and those that made room
  bool cut_short = false;         // --time-limit stopped the moves early
  int type_pass_moves = 0;        // the changes the sharding-type pass was allowed after them (0: none kept)
  PlanMoves changes;
};

}  // namespace shardplan
