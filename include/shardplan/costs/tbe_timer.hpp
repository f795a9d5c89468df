#pragma once
// Shard sets timed with FBGEMM's table-batched embedding (TBE), the kernel TorchRec trains with: each set
// runs as one TBE operator per data type (forward, backward and the fused SGD update) in a worker of
// shard-plan's Python package (shardplan.measure.tbe_worker), kept running between sets. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/costs/measure.hpp"

namespace shardplan {

// The same shards and traces as the embedding_bag kernel's measure_compute_step (shard k's trace is
// seeded `seed + 7919 k`). Throws RuntimeFailure when the worker fails or exits, with its last words.
ComputeTiming measure_with_tbe(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed);

// "torch X, fbgemm-gpu-cpu Y" as the worker reports them (it is started when needed).
std::string tbe_versions(const ComputeBenchConfig& config);

}  // namespace shardplan
