#pragma once
// Writing and reading the weights of a model directory with LibTorch.
#include <nlohmann/json.hpp>
#include <string>

#include "mlp_module.hpp"

namespace shardplan {

inline constexpr const char* kComputeWeightsFile = "compute.pt";
inline constexpr const char* kCommWeightsFile = "comm.pt";

// Writes the weights and meta.json (each file atomically; meta.json last, so a directory with a
// meta.json is complete).
void save_model_directory(const std::string& dir, const nlohmann::json& meta, ComputeNet& compute, MlpNet& comm);

}  // namespace shardplan
