#pragma once
// Feature vectors of the neural cost models, defined once for the trainer (LibTorch) and the evaluator
// (plain C++). Changing them changes kFeatureSchemaVersion, which model directories record.
#include <array>
#include <cstdint>
#include <vector>

#include "shardplan/costs/cost_data.hpp"

namespace shardplan {

inline constexpr int kFeatureSchemaVersion = 1;

// Per shard: log rows, dim, log1p pooling factor, log lookups x dim (the gathered bytes), log rows x dim
// (the table bytes), the 17 reuse bins, and the hot-row mass (bins above 64 accesses).
inline constexpr int kComputeFeatures = 5 + kReuseBins + 1;
using ComputeFeatureVector = std::array<float, kComputeFeatures>;
ComputeFeatureVector compute_features(const ShardFeatures& shard);

// Per device of a collective: own width, own start delay; world size; mean, max and sum of the widths;
// mean and max delay; own width over the mean; own delay below the maximum (its wait).
inline constexpr int kCommFeatures = 10;
using CommFeatureVector = std::array<float, kCommFeatures>;
std::vector<CommFeatureVector> comm_features(const std::vector<int64_t>& dim_sums, const std::vector<double>& delays_ms);

}  // namespace shardplan
