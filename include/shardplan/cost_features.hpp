#pragma once
// Feature vectors of the neural cost models, defined once for the trainer (LibTorch) and the evaluator
// (plain C++). Changing them changes kFeatureSchemaVersion, which model directories record.
#include <array>
#include <cstdint>
#include <vector>

#include "shardplan/costs/cost_data.hpp"

namespace shardplan {

inline constexpr int kFeatureSchemaVersion = 2;

// Per shard: log rows, dim, log1p pooling factor, log lookups x dim (the gathered bytes), log rows x dim
// (the table bytes), the 17 reuse bins, and the hot-row mass (bins above 64 accesses).
inline constexpr int kComputeFeatures = 5 + kReuseBins + 1;
using ComputeFeatureVector = std::array<float, kComputeFeatures>;
ComputeFeatureVector compute_features(const ShardFeatures& shard);

// Per device of a collective, all free of absolute scale so that the model carries over to device counts
// it was not trained on: log1p of the own, mean and max width; own width over the mean and over the max;
// log of the world size; log1p of the own wait (the latest start minus its own), of the max and of the
// mean delay.
inline constexpr int kCommFeatures = 9;
using CommFeatureVector = std::array<float, kCommFeatures>;
std::vector<CommFeatureVector> comm_features(const std::vector<int64_t>& dim_sums, const std::vector<double>& delays_ms);
// The same into `out` (resized), so a search evaluating many plans reuses one buffer.
void comm_features_into(const std::vector<int64_t>& dim_sums, const std::vector<double>& delays_ms,
                        std::vector<CommFeatureVector>& out);

// A device's wait inside the forward all-to-all: it cannot finish before the latest device has started.
std::vector<double> comm_waits(const std::vector<double>& delays_ms);

}  // namespace shardplan
