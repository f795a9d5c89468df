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

// A model directory as trainable modules (for fine-tuning, or to carry its communication part into a new
// model) and as the plain specs inference uses. Missing or corrupt files throw InputError naming the file.
struct ModelFiles {
  nlohmann::json meta;
  ComputeNet compute{nullptr};
  MlpNet comm{nullptr};
  ComputeModelSpec compute_spec;
  CommModelSpec comm_spec;
};
ModelFiles load_model_files(const std::string& dir);

}  // namespace shardplan
