#pragma once
// TorchRec's per-shard perf estimate for every sharding type (EmbeddingPerfEstimator in torchrec's
// planner/shard_estimators.py), as the "torchrec" baselines rate their options. No LibTorch.
#include "shardplan/core/plan.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

// One shard's forward and backward time, in ms, as TorchRec estimates it: a `cols`-wide shard of `table`
// (row-wise, table-row-wise and data-parallel shards hold every column) under `type`, on `world_size`
// ranks with `config.batch_size` samples in all. Its planner adds these up per rank.
double torchrec_shard_perf_ms(ShardingType type, const Table& table, int cols, int world_size,
                              const AnalyticCostConfig& config);

// TorchRec's local world size (comm.get_local_size): the GPUs per host when they divide the job, else the
// whole job.
int torchrec_local_world_size(int world_size, int devices_per_host);

}  // namespace shardplan
