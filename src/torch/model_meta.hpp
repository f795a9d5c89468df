#pragma once
// A model directory's meta.json read and checked without LibTorch (so the fuzzers can reach it): the
// specs inference needs, less the weights, and the layer widths the weights files must have.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/neural_cost_model.hpp"

namespace shardplan {

struct ModelMeta {
  ComputeModelSpec compute;  // its nets empty until the weights are loaded
  bool learns_step_cost = false;
  std::vector<int> shard_widths;
  std::vector<int> head_widths;
  CommModelSpec comm;  // its net empty until the weights are loaded
  int comm_inputs = 0;
  std::vector<int> comm_widths;  // the hidden layers, then the two outputs
  int concave_begin = 0;         // hierarchical: the first layer's concave units [begin, end)
  int concave_end = 0;
};

// Throws InputError naming `source`, the field and the value for anything missing, of the wrong type or
// out of range.
ModelMeta parse_model_meta(const nlohmann::json& meta, const std::string& source);

}  // namespace shardplan
