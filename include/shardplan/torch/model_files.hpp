#pragma once
// Reading a model directory (model_location.hpp) with LibTorch into the neural cost model, whose inference
// is plain C++. No LibTorch types here.
#include <memory>
#include <string>

#include "shardplan/cost_model/neural_cost_model.hpp"

namespace shardplan {

// Loads a model directory, or a bundled model by name (resolve_model_dir). Missing or corrupt files throw
// InputError naming the file.
std::unique_ptr<NeuralCostModel> load_cost_model(const std::string& dir);

}  // namespace shardplan
