#pragma once
// Model directories ("shard-plan-model/2"): meta.json (feature schema, normalisation, architecture,
// training provenance, test metrics) and the weights compute.pt and comm.pt, written by LibTorch; where
// the bundled ones are. The torch layer reads them (load_cost_model, torch/model_files.hpp).
#include <string>
#include <vector>

namespace shardplan {

inline constexpr const char* kModelFormat = "shard-plan-model/2";
inline constexpr const char* kModelMetaFile = "meta.json";
inline constexpr const char* kComputeWeightsFile = "compute.pt";
inline constexpr const char* kCommWeightsFile = "comm.pt";
// meta.json's comm.form for the hierarchical all-to-all model (absent: the scale-free one).
inline constexpr const char* kHierarchicalCommForm = "hierarchical";
// meta.json's comm.backward_context when the backward's correction sees no start delays (CommModelSpec).
inline constexpr const char* kBackwardWithoutDelays = "no start delays";

// The bundled models by what they describe. Planning GPUs uses the GPU's (an H100, its all-to-all
// planned on that profile's links); measuring on this machine's CPU starts from the CPU's (compute and
// Gloo all-to-alls timed on a 2-core VM).
inline constexpr const char* kGpuModelName = "h100";
inline constexpr const char* kGpuModelHardware = "h100-sxm-ib400";
inline constexpr const char* kCpuModelName = "cpu-2core";
// The CPU model's name until 2026-11-27, still resolved to it.
inline constexpr const char* kFormerCpuModelName = "default";

// The bundled model NAME: `models/NAME` beside the executable's directory (a build tree) or under its
// install prefix (share/shard-plan/models/NAME), else under the configured install prefix, else in
// the source tree the build was configured from. Empty when none exists.
std::string find_bundled_model_dir(const std::string& name);

// A model directory as given, or, for a bare name that is no directory here ("h100"), the bundled
// models/NAME found as above (the former name of a renamed one too); the name unchanged when there is
// none (the loader then names it).
std::string resolve_model_dir(const std::string& dir_or_name);

// The files a model directory holds, meta.json first: what loading it reads.
std::vector<std::string> model_directory_files(const std::string& dir);

}  // namespace shardplan
