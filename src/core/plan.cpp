#include "shardplan/plan.hpp"

#include <fmt/format.h>

namespace shardplan {

std::string_view sharding_type_name(ShardingType type) {
  return type == ShardingType::kColumnWise ? "column_wise" : "table_wise";
}

std::vector<DeviceUsage> device_usage(const Plan& plan) {
  std::vector<DeviceUsage> usage(static_cast<std::size_t>(plan.cluster.num_devices));
  for (const auto& table : plan.tables) {
    for (const auto& shard : table.shards) {
      auto& device = usage.at(static_cast<std::size_t>(shard.rank));
      device.memory_bytes += shard_memory_bytes(shard.rows, shard.cols, table.dtype, plan.cluster.optimizer);
      device.num_shards += 1;
      (table.type == ShardingType::kColumnWise ? device.num_column_wise : device.num_table_wise) += 1;
      device.dim_sum += shard.cols;
    }
  }
  return usage;
}

std::string placement_string(int rank, int devices_per_host) {
  return fmt::format("rank:{}/cuda:{}", rank, rank % devices_per_host);
}

TableSharding sharding_of(const Table& table, std::vector<Shard> shards) {
  TableSharding sharding;
  sharding.name = table.name;
  sharding.rows = table.rows;
  sharding.dim = table.dim;
  sharding.dtype = table.dtype;
  bool whole = shards.size() == 1 && shards.front().cols == table.dim;
  sharding.type = whole ? ShardingType::kTableWise : ShardingType::kColumnWise;
  sharding.shards = std::move(shards);
  return sharding;
}

TableSharding table_wise_sharding(const Table& table, int rank) {
  return sharding_of(table, {Shard{rank, 0, 0, table.rows, table.dim}});
}

}  // namespace shardplan
