#pragma once
// Writing and reading the weights of a model directory with LibTorch; the torch layer's own part of
// model_files.cpp (load_cost_model, for everyone, is shardplan/torch/model_files.hpp).
#include <nlohmann/json.hpp>
#include <string>

#include "mlp_module.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/torch/model_files.hpp"

namespace shardplan {

// Writes the weights and meta.json, all staged before any is renamed into place (meta.json last, so a
// directory with a meta.json is complete). Records each weights file's SHA-256 in `meta` first
// (model_verify.hpp), so that a later write of `meta` keeps them.
void save_model_directory(const std::string& dir, nlohmann::json& meta, ComputeNet& compute, MlpNet& comm);

// A model directory as trainable modules (for fine-tuning, or to carry its communication part into a new
// model) and as the plain specs inference uses. Missing or corrupt files throw InputError naming the file.
struct ModelFiles {
  nlohmann::json meta;
  ComputeNet compute{nullptr};
  MlpNet comm{nullptr};
  ComputeModelSpec compute_spec;
  CommModelSpec comm_spec;
};
// `dir` may also name a bundled model ("h100"): resolve_model_dir.
ModelFiles load_model_files(const std::string& dir);

struct HardwareProfile;

// A compute-only model for other hardware (a GPU) keeps another model's comm net only as a record: its
// meta's "comm" section becomes the profile's links at the batch the compute was timed with, predicted by
// the structure alone ("structure_only"), and its "hardware.comm" names the profile instead of measured
// all-to-alls. `from` is the model the net came from. Throws InputError when the section has no
// hierarchical structure to plan with.
void plan_comm_on_profile(nlohmann::json& comm_section, nlohmann::json& comm_hardware, const HardwareProfile& profile,
                          int64_t batch, const std::string& from);

// Kept comm for compute timed at `compute_batch`: a structure-only section simply takes that batch; a
// learned one timed at another batch is kept, with a warning that it weighs communication wrongly.
void match_comm_batch(nlohmann::json& comm_section, int64_t compute_batch, const std::string& from);

}  // namespace shardplan
