#include "model_files.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "model_meta.hpp"
#include "model_verify.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/sha256.hpp"
#include "shardplan/cost_model/cost_features.hpp"
#include "shardplan/cost_model/model_location.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

// A module as torch.save writes it, in memory: hashed for meta.json, then staged with the other files.
template <typename ModuleHolder>
std::string serialized(ModuleHolder& module) {
  std::ostringstream out;
  torch::save(module, out);
  return out.str();
}

// A weight that is not finite makes every prediction NaN: refused on load, naming the file.
void require_finite_weights(const Mlp& net, const std::string& file) {
  for (const DenseLayer& layer : net.layers) {
    for (const std::vector<float>* values : {&layer.weight, &layer.bias}) {
      for (float v : *values) {
        if (!std::isfinite(v))
          throw InputError(fmt::format("{}: holds a weight that is not a finite number ({})", file, v));
      }
    }
  }
}

template <typename ModuleHolder>
void load_weights(ModuleHolder& module, const fs::path& path) {
  try {
    torch::load(module, path.string());
  } catch (const c10::Error& e) {
    throw InputError(
        fmt::format("{}: not readable as this model's weights (corrupt, truncated or another "
                    "architecture): {}",
                    path.string(), e.what_without_backtrace()));
  }
}

}  // namespace

void save_model_directory(const std::string& dir, nlohmann::json& meta, ComputeNet& compute, MlpNet& comm) {
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw RuntimeFailure(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  const std::string compute_bytes = serialized(compute);
  const std::string comm_bytes = serialized(comm);
  meta[kModelFilesKey] = model_files_record({{kComputeWeightsFile, compute_bytes}, {kCommWeightsFile, comm_bytes}});
  OutputFiles outputs;
  outputs.stage((root / kComputeWeightsFile).string(), compute_bytes);
  outputs.stage((root / kCommWeightsFile).string(), comm_bytes);
  outputs.stage((root / kModelMetaFile).string(), meta.dump(2) + "\n");
  outputs.commit();  // renamed in this order: meta.json last
}

void plan_comm_on_profile(nlohmann::json& comm_section, nlohmann::json& comm_hardware, const HardwareProfile& profile,
                          int64_t batch, const std::string& from) {
  if (comm_section.value("form", std::string()) != kHierarchicalCommForm) {
    throw SettingError("hardware profile",
                       fmt::format("the all-to-all of {} has no hierarchical structure to plan on {}'s links; "
                                   "re-train that model, or start from a newer one",
                                   from, profile.name));
  }
  comm_section["fabric"] = fabric_to_json(fabric_of(profile, batch));
  comm_section["structure_only"] = true;
  comm_hardware = {{"profile", profile.name}, {"structure_only", true}, {"net_from_model", from}};
  spdlog::info(
      "communication: the hierarchical estimate on profile {}'s links at batch {} ({}); the comm net of "
      "{} is kept but not used",
      profile.name, batch, profile.source_path, from);
}

void match_comm_batch(nlohmann::json& comm_section, int64_t compute_batch, const std::string& from) {
  if (!comm_section.contains("fabric") || !comm_section["fabric"].contains("batch_size")) return;
  const int64_t comm_batch = comm_section["fabric"]["batch_size"].get<int64_t>();
  if (comm_batch == compute_batch) return;
  if (comm_section.value("structure_only", false)) {
    comm_section["fabric"]["batch_size"] = compute_batch;  // no learned net: the structure scales with the batch
    return;
  }
  spdlog::warn(
      "the compute was timed at batch {} but {}'s all-to-alls at batch {}: the model will weigh "
      "communication against compute wrongly; plan the all-to-all on a hardware profile's links at batch {} "
      "instead",
      compute_batch, from, comm_batch, compute_batch);
}

ModelFiles load_model_files(const std::string& dir_or_name) {
  const std::string dir = resolve_model_dir(dir_or_name);
  fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw InputError(fmt::format("{}: not a model directory, nor the name of a bundled model (models/NAME)", dir));
  }
  const std::string source = (root / kModelMetaFile).string();
  ModelFiles files;
  files.meta = read_json_file(source);
  ModelMeta meta = parse_model_meta(files.meta, source);
  // Checked before LibTorch reads them: it would load a file whose bytes changed (issue 43).
  for (const char* weights : {kComputeWeightsFile, kCommWeightsFile}) {
    if (!fs::exists(root / weights)) {
      throw InputError(fmt::format("{}: missing (the model directory is incomplete)", (root / weights).string()));
    }
    verify_model_file((root / weights).string(), files.meta, source);
  }

  files.compute_spec = std::move(meta.compute);
  ComputeModelSpec& compute = files.compute_spec;
  files.compute = ComputeNet(kComputeFeatures, meta.shard_widths, meta.head_widths, compute.interaction_range,
                             meta.learns_step_cost, compute.latency_weighted_context);
  load_weights(files.compute, root / kComputeWeightsFile);
  compute.shard_net = files.compute->shard_net->to_plain();
  compute.alone = files.compute->alone->to_plain();
  compute.head = files.compute->head->to_plain();
  for (const Mlp* net : {&compute.shard_net, &compute.alone, &compute.head}) {
    require_finite_weights(*net, (root / kComputeWeightsFile).string());
  }

  files.comm_spec = std::move(meta.comm);
  CommModelSpec& comm = files.comm_spec;
  files.comm = MlpNet(meta.comm_inputs, meta.comm_widths, false);
  load_weights(files.comm, root / kCommWeightsFile);
  comm.net = files.comm->to_plain();
  require_finite_weights(comm.net, (root / kCommWeightsFile).string());
  if (comm.form == CommForm::kHierarchical) {
    DenseLayer& first = comm.net.layers.front();
    first.concave_begin = meta.concave_begin;
    first.concave_end = meta.concave_end;
    for (int input = 0; input < kHierCommMonotoneInputs; ++input) {
      if (!mlp_non_decreasing_in(comm.net, input)) {
        throw InputError(
            fmt::format("{}: the hierarchical all-to-all network has negative weights on the path of its "
                        "structural input {}, so more bytes could cost less; re-train the model",
                        (root / kCommWeightsFile).string(), input));
      }
    }
  }
  return files;
}

std::unique_ptr<NeuralCostModel> load_cost_model(const std::string& dir) {
  ModelFiles files = load_model_files(dir);
  std::string name = files.meta.value("name", fs::path(dir).filename().string());
  auto model =
      std::make_unique<NeuralCostModel>("neural:" + name, std::move(files.compute_spec), std::move(files.comm_spec));
  model->set_hardware(hardware_from_model_meta(files.meta));
  if (model->comm_spec().structure_only) model->plan_for_hardware(model->comm_spec().fabric);
  return model;
}

}  // namespace shardplan
