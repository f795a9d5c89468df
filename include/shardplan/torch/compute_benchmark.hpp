#pragma once
// Times one training step of a device's embedding stage the way production runs it: the shards grouped
// by width into table-batched embedding-bag operators (one per width, like FBGEMM's TBE), forward
// sum-pooling, backward with sparse gradients, and the sparse SGD update. No LibTorch types here.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/costs/measure.hpp"

namespace shardplan {

// `shards` are full tables or column pieces (rows x dim with the table's traffic). Index traces are
// synthesised from each shard's pooling factor and reuse histogram with `seed` (the same for either
// kernel). Throws InputError for an unavailable device, RuntimeFailure when the kernel fails (out of
// memory, say).
ComputeTiming measure_compute_step(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed);

// measure_compute_step with `config`: the ComputeTimer the collectors are handed.
ComputeTimer compute_timer(const ComputeBenchConfig& config);

// Facts recorded with every measurement (provenance.hpp has this machine's).
std::string torch_version();
bool cuda_available();

}  // namespace shardplan
