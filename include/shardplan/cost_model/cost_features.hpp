#pragma once
// Feature vectors of the neural cost models, defined once for the trainer (LibTorch) and the evaluator
// (plain C++). Changing them changes kFeatureSchemaVersion, which model directories record.
#include <array>
#include <cstdint>
#include <vector>

#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_data.hpp"

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
std::vector<CommFeatureVector> comm_features(const std::vector<int64_t>& dim_sums,
                                             const std::vector<double>& delays_ms);
// The same into `out` (resized), so a search evaluating many plans reuses one buffer.
void comm_features_into(const std::vector<int64_t>& dim_sums, const std::vector<double>& delays_ms,
                        std::vector<CommFeatureVector>& out);

// The hierarchical comm model's inputs per device (cost-models.md, "Communication model"). The first
// kHierCommMonotoneInputs are [0..4] logs of the structural times (AllToAllTimes: total, out, in, host,
// latency), the only inputs through which bytes enter; the network is non-decreasing in them. Then the context: [5] the
// share of its peers on other hosts, [6] log1p of its own wait, [7] log1p of the max and [8] of the mean start delay.
// The world size enters only through the structure (peers, each peer's share of the batch): a network given it learned
// each measured size apart and interpolated between them badly (docs/cost-models.md).
inline constexpr int kHierCommFeatures = 9;
inline constexpr int kHierCommMonotoneInputs = 5;
using HierCommFeatureVector = std::array<float, kHierCommFeatures>;
// `structure_ms` receives each device's structural total (at least kMinStructureMs).
void hierarchical_comm_features_into(const CommFabric& fabric, const std::vector<int64_t>& dim_sums,
                                     const std::vector<double>& delays_ms, std::vector<HierCommFeatureVector>& out,
                                     std::vector<double>& structure_ms);
inline constexpr double kMinStructureMs = 1e-6;

// The hierarchical comm features from this one on are the start delays: own wait, max and mean delay.
inline constexpr std::size_t kFirstStartDelayFeature = 6;

// The same device's inputs had every device started at once (no own wait, no delays): what the
// backward's correction sees, since the backward all-to-all starts together after the dense layers.
void clear_start_delays(HierCommFeatureVector& features);

// A device's wait inside the forward all-to-all: it cannot finish before the latest device has started.
std::vector<double> comm_waits(const std::vector<double>& delays_ms);

}  // namespace shardplan
