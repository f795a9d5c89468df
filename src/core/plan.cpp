#include "shardplan/core/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace shardplan {

namespace {

// Each rank's pooled output width from one table: its shards' columns; a row-wise table's full width on
// every rank (all ranks join its reduce-scatter, block or not); nothing for replicas.
template <typename AddWidth>
void for_each_output_width(const TableSharding& table, int num_devices, AddWidth add) {
  switch (table.type) {
    case ShardingType::kDataParallel:
      return;
    case ShardingType::kRowWise:
      for (int rank = 0; rank < num_devices; ++rank) add(rank, table.dim);
      return;
    default:
      for (const auto& shard : table.shards) add(shard.rank, shard.cols);
  }
}

}  // namespace

std::string_view compute_kernel_name(const TableSharding& table) {
  if (table.type == ShardingType::kDataParallel) return "dense";
  return table.cache ? "fused_uvm_caching" : "fused";
}

PieceMemory shard_memory(const TableSharding& table, const Shard& shard, Optimizer optimizer) {
  if (table.cache) return cached_piece_memory(shard.rows, shard.cols, table.dtype, optimizer, table.cache->load_factor);
  return PieceMemory{shard_memory_bytes(shard.rows, shard.cols, table.dtype, optimizer), 0};
}

bool has_cached_tables(const Plan& plan) {
  return std::any_of(plan.tables.begin(), plan.tables.end(),
                     [](const TableSharding& t) { return t.cache.has_value(); });
}

std::vector<int64_t> host_ddr_bytes(const Plan& plan, const std::vector<DeviceUsage>& usage) {
  const int per_host = std::max(plan.cluster.devices_per_host, 1);
  std::vector<int64_t> hosts(static_cast<std::size_t>((plan.cluster.num_devices + per_host - 1) / per_host), 0);
  for (std::size_t r = 0; r < usage.size(); ++r) hosts[r / static_cast<std::size_t>(per_host)] += usage[r].ddr_bytes;
  return hosts;
}

std::vector<DeviceUsage> device_usage(const Plan& plan) {
  std::vector<DeviceUsage> usage(static_cast<std::size_t>(plan.cluster.num_devices));
  for (const auto& table : plan.tables) {
    for (const auto& shard : table.shards) {
      auto& device = usage.at(static_cast<std::size_t>(shard.rank));
      const PieceMemory memory = shard_memory(table, shard, plan.cluster.optimizer);
      device.memory_bytes += memory.hbm;
      device.ddr_bytes += memory.ddr;
      // A replica's dense gradient (replica_memory_bytes).
      if (table.type == ShardingType::kDataParallel) device.memory_bytes += replica_gradient_bytes(table);
      device.num_shards += 1;
      switch (table.type) {
        case ShardingType::kTableWise:
          device.num_table_wise += 1;
          break;
        case ShardingType::kColumnWise:
          device.num_column_wise += 1;
          break;
        case ShardingType::kRowWise:
        case ShardingType::kTableRowWise:
          device.num_row_wise += 1;
          break;
        case ShardingType::kDataParallel:
          device.num_data_parallel += 1;
          break;
      }
    }
    for_each_output_width(table, plan.cluster.num_devices,
                          [&](int rank, int64_t cols) { usage[static_cast<std::size_t>(rank)].dim_sum += cols; });
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
  // A table the tables file keeps column-wise stays so in one slice (TorchRec's column_wise(ranks=[r])).
  const ShardingTypeSet own = table.constraints.sharding_types;
  const bool whole = shards.size() == 1 && shards.front().cols == table.dim;
  sharding.type = whole && (own.empty() || own.allows(ShardingType::kTableWise)) ? ShardingType::kTableWise
                                                                                 : ShardingType::kColumnWise;
  sharding.shards = std::move(shards);
  return sharding;
}

namespace {

// The ids a shard's rows receive per sample: its share of the table's rows.
double shard_pooling_factor(const Table& table, const Shard& shard) {
  if (table.rows <= 0) return table.pooling_factor;
  return table.pooling_factor * static_cast<double>(shard.rows) / static_cast<double>(table.rows);
}

}  // namespace

Table shard_as_table(const Table& table, const Shard& shard) {
  Table piece = table;
  piece.rows = shard.rows;
  piece.dim = static_cast<int>(shard.cols);
  piece.pooling_factor = shard_pooling_factor(table, shard);
  return piece;
}

double input_ids_per_sample(const Table& table, const Shard& shard) { return shard_pooling_factor(table, shard) + 1.0; }

Table replica_as_table(const Table& table, int num_devices) {
  Table piece = table;
  piece.pooling_factor = table.pooling_factor / static_cast<double>(std::max(num_devices, 1));
  return piece;
}

// A dense gradient is the size of the weights alone: the memory of a shard with no optimizer state.
int64_t replica_gradient_bytes(const Table& table) {
  return shard_memory_bytes(table.rows, table.dim, table.dtype, Optimizer::kSgd);
}

int64_t replica_gradient_bytes(const TableSharding& table) {
  return shard_memory_bytes(table.rows, table.dim, table.dtype, Optimizer::kSgd);
}

int64_t replica_memory_bytes(const Table& table, Optimizer optimizer) {
  return table_memory_bytes(table, optimizer) + replica_gradient_bytes(table);
}

std::vector<DeviceShards> device_shards(const Plan& plan, const std::vector<Table>& tables) {
  std::unordered_map<std::string, const Table*> by_name;
  for (const auto& table : tables) by_name.emplace(table.name, &table);
  std::vector<DeviceShards> devices(static_cast<std::size_t>(plan.cluster.num_devices));
  int64_t allreduce_bytes = 0;
  int64_t row_wise_dim = 0;
  const int per_host = std::max(plan.cluster.devices_per_host, 1);
  std::vector<int64_t> host_row_wise_dims(
      static_cast<std::size_t>((plan.cluster.num_devices + per_host - 1) / per_host), 0);
  ShardingTypeSet used;
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const Table& table = *by_name.at(plan.tables[t].name);
    const bool replicated = plan.tables[t].type == ShardingType::kDataParallel;
    if (!plan.tables[t].shards.empty()) used.add(plan.tables[t].type);
    if (replicated) allreduce_bytes += replica_gradient_bytes(table);
    if (plan.tables[t].type == ShardingType::kRowWise) row_wise_dim += plan.tables[t].dim;
    if (plan.tables[t].type == ShardingType::kTableRowWise && !plan.tables[t].shards.empty()) {
      host_row_wise_dims.at(static_cast<std::size_t>(plan.tables[t].shards.front().rank / per_host)) +=
          plan.tables[t].dim;
    }
    for (const auto& shard : plan.tables[t].shards) {
      DeviceShards& device = devices[static_cast<std::size_t>(shard.rank)];
      device.pieces.push_back(replicated ? replica_as_table(table, plan.cluster.num_devices)
                                         : shard_as_table(table, shard));
      device.plan_tables.push_back(t);
      device.load_factors.push_back(plan.tables[t].cache ? plan.tables[t].cache->load_factor : 0.0);
      if (!replicated) device.input_ids += input_ids_per_sample(device.pieces.back());
    }
    for_each_output_width(plan.tables[t], plan.cluster.num_devices,
                          [&](int rank, int64_t cols) { devices[static_cast<std::size_t>(rank)].dim_sum += cols; });
  }
  for (auto& device : devices) {
    device.allreduce_bytes = allreduce_bytes;
    device.row_wise_dim = row_wise_dim;
    device.host_row_wise_dim = *std::max_element(host_row_wise_dims.begin(), host_row_wise_dims.end());
    device.devices_per_host = per_host;
    device.alltoall_groups = (used & ShardingTypeSet::with_alltoalls()).count();
  }
  return devices;
}

std::string shard_piece_key(const Table& piece) {
  std::string key = fmt::format("{}|{}|{}|{:.17g}|{}|", piece.name, piece.rows, piece.dim, piece.pooling_factor,
                                static_cast<int>(piece.dtype));
  for (double h : piece.reuse_hist_or_default()) key += fmt::format("{:.17g},", h);
  return key + "\n";
}

std::string shard_set_key(const std::vector<Table>& pieces) {
  std::vector<std::string> keys;
  keys.reserve(pieces.size());
  for (const auto& piece : pieces) keys.push_back(shard_piece_key(piece));
  std::sort(keys.begin(), keys.end());
  std::string key;
  for (const auto& k : keys) key += k;
  return key;
}

TableSharding table_wise_sharding(const Table& table, int rank) {
  return sharding_of(table, {Shard{rank, 0, 0, table.rows, table.dim}});
}

namespace {

// Blocks of ceil(rows / ranks) rows on first_rank, first_rank + 1, ... (empty blocks left out).
std::vector<Shard> row_blocks(const Table& table, int first_rank, int ranks) {
  const int64_t block = (table.rows + ranks - 1) / ranks;
  std::vector<Shard> shards;
  for (int k = 0; k < ranks && k * block < table.rows; ++k) {
    shards.push_back(Shard{first_rank + k, k * block, 0, std::min(block, table.rows - k * block), table.dim});
  }
  return shards;
}

TableSharding typed_sharding(const Table& table, ShardingType type, std::vector<Shard> shards) {
  TableSharding sharding = sharding_of(table, std::move(shards));
  sharding.type = type;
  return sharding;
}

}  // namespace

TableSharding row_wise_sharding(const Table& table, int num_devices) {
  return typed_sharding(table, ShardingType::kRowWise, row_blocks(table, 0, num_devices));
}

TableSharding table_row_wise_sharding(const Table& table, int host, int devices_per_host) {
  return typed_sharding(table, ShardingType::kTableRowWise,
                        row_blocks(table, host * devices_per_host, devices_per_host));
}

TableSharding data_parallel_sharding(const Table& table, int num_devices) {
  std::vector<Shard> shards;
  for (int r = 0; r < num_devices; ++r) shards.push_back(Shard{r, 0, 0, table.rows, table.dim});
  return typed_sharding(table, ShardingType::kDataParallel, std::move(shards));
}

double max_total_ms(const std::vector<DeviceCost>& costs) {
  double worst = 0.0;
  for (const auto& c : costs) worst = std::max(worst, c.total_ms());
  return worst;
}

std::string plan_layout_key(const Plan& plan) {
  std::string out;
  for (const auto& table : plan.tables) {
    out += fmt::format("{}|", static_cast<int>(table.type));
    if (table.cache) out += fmt::format("cache {:.17g}|", table.cache->load_factor);
    for (const auto& s : table.shards)
      out += fmt::format("{}:{}:{}:{}:{};", s.rank, s.row_offset, s.col_offset, s.rows, s.cols);
    out += '|';
  }
  return out;
}

CostSummary summarise_costs(const std::vector<DeviceCost>& costs) {
  CostSummary summary;
  double sum = 0.0;
  for (std::size_t r = 0; r < costs.size(); ++r) {
    const double total = costs[r].total_ms();
    if (r == 0 || total > summary.max_ms) {
      summary.max_ms = total;
      summary.slowest = static_cast<int>(r);
    }
    summary.max_compute_ms = std::max(summary.max_compute_ms, costs[r].compute_ms);
    sum += total;
  }
  summary.mean_ms = costs.empty() ? 0.0 : sum / static_cast<double>(costs.size());
  return summary;
}

std::string format_cost_summary(const CostSummary& summary) {
  return fmt::format("max {:.3f} ms on rank {}, mean {:.3f} ms, imbalance {:.3f}", summary.max_ms, summary.slowest,
                     summary.mean_ms, summary.imbalance());
}

}  // namespace shardplan
