#pragma once
// TorchRec's sharding types and sets of them: what a plan uses and what a table or a plan may use.
#include <bitset>
#include <optional>
#include <string_view>

namespace shardplan {

// TorchRec's sharding types (docs/sharding-types.md). Row-wise blocks span every rank, table-row-wise
// blocks the ranks of one host, and a data-parallel table has a whole replica on every rank.
enum class ShardingType { kTableWise, kColumnWise, kRowWise, kTableRowWise, kDataParallel };

inline constexpr int kNumShardingTypes = 5;

// TorchRec's names: "table_wise", "column_wise", "row_wise", "table_row_wise", "data_parallel".
std::string_view sharding_type_name(ShardingType type);
std::optional<ShardingType> parse_sharding_type(std::string_view name);

struct ShardingTypeSet {
  unsigned bits = 0;

  static ShardingTypeSet all();
  static ShardingTypeSet table_and_column();  // what the NeuroShard search itself makes
  // The types TorchRec distributes in all-to-alls of their own: all but data-parallel.
  static ShardingTypeSet with_alltoalls() {
    ShardingTypeSet all_but_replicas = all();
    all_but_replicas.bits &= ~(1u << static_cast<unsigned>(ShardingType::kDataParallel));
    return all_but_replicas;
  }
  bool allows(ShardingType type) const { return (bits >> static_cast<unsigned>(type)) & 1u; }
  void add(ShardingType type) { bits |= 1u << static_cast<unsigned>(type); }
  bool empty() const { return bits == 0; }
  int count() const { return static_cast<int>(std::bitset<kNumShardingTypes>(bits).count()); }
  ShardingTypeSet operator&(ShardingTypeSet other) const { return ShardingTypeSet{bits & other.bits}; }
  bool operator==(const ShardingTypeSet& other) const { return bits == other.bits; }
  // Whether a plan may use row-wise, table-row-wise or data-parallel shards.
  bool beyond_table_and_column() const { return (bits & ~table_and_column().bits) != 0; }
};

}  // namespace shardplan
