// TorchRec's estimate per sharding type, transcribed from torchrec/distributed/planner/shard_estimators.py
// (_get_tw/_rw/_twrw/_dp_sharding_perf) and constants.py. Its B is the batch per rank; ours is the
// global batch G = B x W, so its `B x W` terms read G here and its `B` terms G / W.
#include "torchrec_estimates.hpp"

#include <algorithm>

namespace shardplan {

namespace {

constexpr double kInputBytesPerId = 8.0;
constexpr double kElementBytes = 4.0;             // fp32 weights and collectives, as the analytic model
constexpr double kBackwardMultiplier = 2.0;       // BWD_COMPUTE_MULTIPLIER
constexpr double kBatchedCopyFactor = 2.455;      // BATCHED_COPY_PERF_FACTOR
constexpr double kReplicaOptimizerFactor = 9.22;  // DP_ELEMENTWISE_KERNELS_PERF_FACTOR

int local_world_size(int world_size, const AnalyticCostConfig& config) {
  return torchrec_local_world_size(world_size, config.devices_per_host);
}

// BasicCommsBandwidths.get_bw for every collective but the all-reduce.
double collective_bytes_per_ms(int group_size, int local_size, const AnalyticCostConfig& config) {
  return group_size <= local_size ? config.intra_host_bytes_per_ms : config.inter_host_bytes_per_ms;
}

// A row block's compute when `spread` blocks share the table's lookups: each reads 1/spread of the ids
// and rows, and writes partial sums for the whole batch.
struct RowBlockBytes {
  double compute_ms = 0.0;
  double output = 0.0;
};

RowBlockBytes row_block(const Table& table, int spread, const AnalyticCostConfig& config) {
  const double global_batch = static_cast<double>(config.batch_size);
  const double lookups = global_batch * table.pooling_factor / spread;
  RowBlockBytes block;
  block.output = global_batch * table.dim * kElementBytes;
  const double forward = (lookups * kInputBytesPerId + lookups * table.dim * kElementBytes + block.output) /
                         config.hbm_bandwidth_bytes_per_ms;
  block.compute_ms = (1.0 + kBackwardMultiplier) * forward;
  return block;
}

double row_wise_perf_ms(const Table& table, int world_size, const AnalyticCostConfig& config) {
  const RowBlockBytes block = row_block(table, world_size, config);
  const double link = collective_bytes_per_ms(world_size, local_world_size(world_size, config), config);
  const double reduce_scatter = block.output / link;
  const double all_gather = block.output / link;
  const double batched_copy = block.output * kBatchedCopyFactor / config.hbm_bandwidth_bytes_per_ms;
  return block.compute_ms + reduce_scatter + all_gather + batched_copy;
}

double table_row_wise_perf_ms(const Table& table, int world_size, const AnalyticCostConfig& config) {
  const int local = local_world_size(world_size, config);
  const RowBlockBytes block = row_block(table, local, config);
  double comms = 2.0 * block.output / config.intra_host_bytes_per_ms;  // reduce-scatter, all-gather in the host
  if (world_size > local) {
    // Then an all-to-all among one rank per host: (B x hosts) samples' sums, each way.
    const double across = static_cast<double>(config.batch_size) / local * table.dim * kElementBytes;
    comms += 2.0 * across / collective_bytes_per_ms(world_size / local, 1, config);
  }
  const double batched_copy = block.output * kBatchedCopyFactor / config.hbm_bandwidth_bytes_per_ms;
  return block.compute_ms + comms + batched_copy;
}

double data_parallel_perf_ms(const Table& table, int world_size, const AnalyticCostConfig& config) {
  const int local = local_world_size(world_size, config);
  const double rank_batch = static_cast<double>(config.batch_size) / world_size;
  const double lookups = rank_batch * table.pooling_factor;
  const double forward =
      (lookups * kInputBytesPerId + lookups * table.dim * kElementBytes + rank_batch * table.dim * kElementBytes) /
      config.hbm_bandwidth_bytes_per_ms;
  const double table_bytes = static_cast<double>(table.rows) * table.dim * kElementBytes;
  // NCCL's ring over min(hosts, 2) nodes, at one NIC per GPU (get_bw for ALL_REDUCE); doubled past 2 hosts.
  const double nodes = std::min(static_cast<double>(world_size) / local, 2.0);
  double all_reduce = table_bytes * (2.0 * nodes - 1.0) / nodes / (config.inter_host_bytes_per_ms * local);
  if (world_size > 2 * local) all_reduce *= 2.0;
  const double optimizer = table_bytes * kReplicaOptimizerFactor / config.hbm_bandwidth_bytes_per_ms;
  return (1.0 + kBackwardMultiplier) * forward + all_reduce + optimizer;
}

}  // namespace

int torchrec_local_world_size(int world_size, int devices_per_host) {
  return devices_per_host > 0 && world_size % devices_per_host == 0 ? devices_per_host : std::max(1, world_size);
}

double torchrec_shard_perf_ms(ShardingType type, const Table& table, int cols, int world_size,
                              const AnalyticCostConfig& config) {
  switch (type) {
    case ShardingType::kTableWise:
    case ShardingType::kColumnWise:
      return analytic_shard_cost(shard_features(table, cols), world_size, config).total_ms();
    case ShardingType::kRowWise:
      return row_wise_perf_ms(table, world_size, config);
    case ShardingType::kTableRowWise:
      return table_row_wise_perf_ms(table, world_size, config);
    case ShardingType::kDataParallel:
      return data_parallel_perf_ms(table, world_size, config);
  }
  return 0.0;
}

}  // namespace shardplan
