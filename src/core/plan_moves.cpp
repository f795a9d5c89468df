#include "shardplan/core/plan_moves.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

namespace shardplan {

namespace {

constexpr std::array<std::pair<TableChange, std::string_view>, 4> kChangeNames = {{{TableChange::kKept, "kept"},
                                                                                   {TableChange::kMoved, "moved"},
                                                                                   {TableChange::kRebuilt, "rebuilt"},
                                                                                   {TableChange::kAdded, "added"}}};

std::vector<int> ranks_of(const TableSharding& table) {
  std::vector<int> ranks;
  for (const Shard& shard : table.shards) ranks.push_back(shard.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

bool same_shape(const TableSharding& a, const TableSharding& b) {
  return a.rows == b.rows && a.dim == b.dim && a.dtype == b.dtype;
}

bool same_shard(const Shard& a, const Shard& b) {
  return a.rank == b.rank && a.row_offset == b.row_offset && a.col_offset == b.col_offset && a.rows == b.rows &&
         a.cols == b.cols;
}

int64_t all_bytes(const TableSharding& table, Optimizer optimizer) {
  int64_t bytes = 0;
  for (const Shard& shard : table.shards) bytes += shard_move_bytes(table, shard, optimizer);
  return bytes;
}

// The bytes of the new shards that the old plan does not hold as they are.
int64_t moved_bytes(const TableSharding& old_table, const TableSharding& new_table, Optimizer optimizer) {
  int64_t bytes = 0;
  for (const Shard& shard : new_table.shards) {
    const bool stays = std::any_of(old_table.shards.begin(), old_table.shards.end(),
                                   [&](const Shard& old) { return same_shard(old, shard); });
    if (!stays) bytes += shard_move_bytes(new_table, shard, optimizer);
  }
  return bytes;
}

}  // namespace

std::string_view table_change_name(TableChange change) {
  for (const auto& [value, name] : kChangeNames) {
    if (value == change) return name;
  }
  return "kept";
}

std::optional<TableChange> parse_table_change(std::string_view name) {
  for (const auto& [value, known] : kChangeNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

int64_t shard_move_bytes(const TableSharding& table, const Shard& shard, Optimizer optimizer) {
  return shard_memory_bytes(shard.rows, shard.cols, table.dtype, optimizer);
}

PlanMoves plan_moves(const Plan& old_plan, const Plan& new_plan, Optimizer optimizer) {
  std::unordered_map<std::string, const TableSharding*> old_tables;
  for (const TableSharding& table : old_plan.tables) old_tables.emplace(table.name, &table);
  PlanMoves moves;
  std::unordered_set<std::string> present;
  for (const TableSharding& table : new_plan.tables) {
    present.insert(table.name);
    TableMove move{table.name, TableChange::kAdded, {}, ranks_of(table), 0};
    const auto old = old_tables.find(table.name);
    if (old == old_tables.end()) {
      move.bytes = all_bytes(table, optimizer);
      moves.added_bytes += move.bytes;
    } else if (!same_shape(*old->second, table)) {
      move.change = TableChange::kRebuilt;
      move.from = ranks_of(*old->second);
      move.bytes = all_bytes(table, optimizer);
      moves.rebuilt_bytes += move.bytes;
    } else {
      move.from = ranks_of(*old->second);
      move.bytes = moved_bytes(*old->second, table, optimizer);
      if (move.bytes == 0) {
        ++moves.kept_tables;
        continue;
      }
      move.change = TableChange::kMoved;
      moves.moved_bytes += move.bytes;
    }
    moves.tables.push_back(std::move(move));
  }
  for (const TableSharding& table : old_plan.tables) {
    if (present.count(table.name) == 0) moves.dropped.push_back(table.name);
  }
  return moves;
}

}  // namespace shardplan
