#include "model_files.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "shardplan/atomic_file.hpp"
#include "shardplan/cost_features.hpp"
#include "shardplan/cost_model_io.hpp"
#include "shardplan/errors.hpp"
#include "shardplan/hardware_profile.hpp"
#include "shardplan/json_fields.hpp"
#include "shardplan/json_file.hpp"
#include "shardplan/model_hardware.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

template <typename ModuleHolder>
void save_weights(ModuleHolder& module, const fs::path& path) {
  fs::path tmp = path;
  tmp += ".tmp";
  torch::save(module, tmp.string());
  fs::rename(tmp, path);
}

template <typename ModuleHolder>
void load_weights(ModuleHolder& module, const fs::path& path) {
  if (!fs::exists(path)) throw InputError(fmt::format("{}: missing (the model directory is incomplete)", path.string()));
  try {
    torch::load(module, path.string());
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: not readable as this model's weights (corrupt, truncated or another "
                                 "architecture): {}", path.string(), e.what_without_backtrace()));
  }
}

std::vector<int> read_widths(const nlohmann::json& meta, const std::string& section, const char* key,
                             const std::string& source) {
  const auto& list = read_array(require_member(meta[section], key, source, section), source, section + "." + key);
  std::vector<int> widths;
  for (std::size_t i = 0; i < list.size(); ++i) {
    widths.push_back(static_cast<int>(read_int64(list[i], source, fmt::format("{}.{}[{}]", section, key, i), 1, kMaxLayerWidth)));
  }
  if (widths.empty()) throw_field_error(source, section + "." + key, "must list at least one layer", list);
  return widths;
}

Normaliser read_normaliser(const nlohmann::json& section, const std::string& name, int size, const std::string& source) {
  Normaliser norm;
  for (const char* key : {"feature_mean", "feature_std"}) {
    const auto& list = read_array(require_member(section, key, source, name), source, name + "." + key);
    if (static_cast<int>(list.size()) != size) {
      throw_field_error(source, name + "." + key, fmt::format("must have {} values (feature schema {})", size, kFeatureSchemaVersion), list);
    }
    auto& out = std::string(key) == "feature_mean" ? norm.mean : norm.std;
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(static_cast<float>(read_double(list[i], source, fmt::format("{}.{}[{}]", name, key, i), -1e30, 1e30)));
    }
  }
  for (std::size_t i = 0; i < norm.std.size(); ++i) {
    if (!(norm.std[i] > 0)) throw_field_error(source, fmt::format("{}.feature_std[{}]", name, i), "must be positive", norm.std[i]);
  }
  return norm;
}

}  // namespace

void save_model_directory(const std::string& dir, const nlohmann::json& meta, ComputeNet& compute, MlpNet& comm) {
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw RuntimeFailure(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  save_weights(compute, root / kComputeWeightsFile);
  save_weights(comm, root / kCommWeightsFile);
  write_file_atomically((root / "meta.json").string(), meta.dump(2) + "\n");
}

void plan_comm_on_profile(nlohmann::json& comm_section, nlohmann::json& comm_hardware, const HardwareProfile& profile,
                          int64_t batch, const std::string& from) {
  if (comm_section.value("form", std::string()) != kHierarchicalCommForm) {
    throw InputError(fmt::format("--hardware {}: the all-to-all of {} has no hierarchical structure to plan on the "
                                 "profile's links; re-train that model, or start from a newer one",
                                 profile.name, from));
  }
  comm_section["fabric"] = fabric_to_json(fabric_of(profile, batch));
  comm_section["structure_only"] = true;
  comm_hardware = {{"profile", profile.name}, {"structure_only", true}, {"net_from_model", from}};
  spdlog::info("communication: the hierarchical estimate on profile {}'s links at batch {} ({}); the comm net of "
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
  spdlog::warn("the compute was timed at batch {} but {}'s all-to-alls at batch {}: the model will weigh "
               "communication against compute wrongly; pass --hardware PROFILE to plan the all-to-all on that "
               "profile's links at batch {}",
               compute_batch, from, comm_batch, compute_batch);
}

ModelFiles load_model_files(const std::string& dir_or_name) {
  const std::string dir = resolve_model_dir(dir_or_name);
  fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw InputError(fmt::format("{}: not a model directory, nor the name of a bundled model (models/NAME)", dir));
  }
  const std::string source = (root / "meta.json").string();
  ModelFiles files;
  nlohmann::json& meta = files.meta;
  meta = read_json_file(source);
  read_object(meta, source, "(top level)");
  if (meta.value("format", "") != kModelFormat) {
    throw_field_error(source, "format", fmt::format("expected \"{}\"", kModelFormat), meta.value("format", nlohmann::json()));
  }
  int64_t schema = read_int64(require_member(meta, "feature_schema", source, ""), source, "feature_schema", 0, 1000);
  if (schema != kFeatureSchemaVersion) {
    throw InputError(fmt::format("{}: feature_schema {} is not this build's {}; re-train the model", source, schema,
                                 kFeatureSchemaVersion));
  }
  read_object(require_member(meta, "compute", source, ""), source, "compute");
  read_object(require_member(meta, "comm", source, ""), source, "comm");

  ComputeModelSpec& compute = files.compute_spec;
  compute.features = read_normaliser(meta["compute"], "compute", kComputeFeatures, source);
  compute.interaction_range = static_cast<float>(read_double(
      require_member(meta["compute"], "interaction_range", source, "compute"), source, "compute.interaction_range", 0.0, 10.0));
  const auto* step_cost = find_member(meta["compute"], "step_cost_ms");
  if (step_cost != nullptr) {
    compute.step_cost_ms = static_cast<float>(read_double(*step_cost, source, "compute.step_cost_ms", 0.0, 1e6));
  }
  if (const auto* context = find_member(meta["compute"], "context")) {
    std::string name = read_string(*context, source, "compute.context");
    if (name != "latency-weighted mean embedding") {
      throw_field_error(source, "compute.context", "unknown (expected \"latency-weighted mean embedding\")", *context);
    }
    compute.latency_weighted_context = true;
  }
  files.compute = ComputeNet(kComputeFeatures, read_widths(meta, "compute", "shard_layers", source),
                             read_widths(meta, "compute", "head_layers", source), compute.interaction_range,
                             /*learn_step_cost=*/step_cost != nullptr, compute.latency_weighted_context);
  load_weights(files.compute, root / kComputeWeightsFile);
  compute.shard_net = files.compute->shard_net->to_plain();
  compute.alone = files.compute->alone->to_plain();
  compute.head = files.compute->head->to_plain();

  CommModelSpec& comm = files.comm_spec;
  int comm_inputs = kCommFeatures;
  if (const auto* form = find_member(meta["comm"], "form")) {
    if (read_string(*form, source, "comm.form") != kHierarchicalCommForm) {
      throw_field_error(source, "comm.form", fmt::format("unknown (expected \"{}\")", kHierarchicalCommForm), *form);
    }
    comm.form = CommForm::kHierarchical;
    comm_inputs = kHierCommFeatures;
    comm.fabric = fabric_from_json(require_member(meta["comm"], "fabric", source, "comm"), source, "comm.fabric");
    validate_fabric(comm.fabric, source + ": comm.fabric");
    if (const auto* allreduce = find_member(meta["comm"], "allreduce")) {
      comm.allreduce = allreduce_fit_from_json(*allreduce, source, "comm.allreduce");
    }
    if (const auto* rowwise = find_member(meta["comm"], "rowwise")) {
      comm.rowwise = rowwise_fit_from_json(*rowwise, source, "comm.rowwise");
    }
    if (const auto* context = find_member(meta["comm"], "backward_context")) {
      const std::string value = read_string(*context, source, "comm.backward_context");
      if (value != kBackwardWithoutDelays) {
        throw_field_error(source, "comm.backward_context", fmt::format("unknown (expected \"{}\")", kBackwardWithoutDelays),
                          *context);
      }
      comm.backward_without_delays = true;
    }
    if (const auto* structure_only = find_member(meta["comm"], "structure_only")) {
      if (!structure_only->is_boolean()) throw_field_error(source, "comm.structure_only", "must be true or false", *structure_only);
      comm.structure_only = structure_only->get<bool>();
    }
    for (const char* key : {"input_min", "input_max"}) {
      const auto& list = read_array(require_member(meta["comm"], key, source, "comm"), source, std::string("comm.") + key);
      if (static_cast<int>(list.size()) != comm_inputs) {
        throw_field_error(source, std::string("comm.") + key, fmt::format("must have {} values", comm_inputs), list);
      }
      auto& out = std::string(key) == "input_min" ? comm.input_min : comm.input_max;
      for (std::size_t i = 0; i < list.size(); ++i) {
        out.push_back(static_cast<float>(read_double(list[i], source, fmt::format("comm.{}[{}]", key, i), -1e30, 1e30)));
      }
    }
  }
  if (const auto* correction = find_member(meta["comm"], "correction")) {
    comm.correction = comm_correction_from_json(*correction, source, "comm.correction");
  }
  comm.features = read_normaliser(meta["comm"], "comm", comm_inputs, source);
  for (int k = 0; k < 2; ++k) {
    for (const char* key : {"target_mean", "target_std"}) {
      const auto& list = require_member(meta["comm"], key, source, "comm");
      if (!list.is_array() || list.size() != 2) throw_field_error(source, std::string("comm.") + key, "must be [fw, bw]", list);
      double value = read_double(list[static_cast<std::size_t>(k)], source, fmt::format("comm.{}[{}]", key, k), -1e6, 1e6);
      (std::string(key) == "target_mean" ? comm.target_mean : comm.target_std)[static_cast<std::size_t>(k)] = static_cast<float>(value);
    }
  }
  std::vector<int> comm_widths = read_widths(meta, "comm", "layers", source);
  comm_widths.push_back(2);
  files.comm = MlpNet(comm_inputs, comm_widths, false);
  load_weights(files.comm, root / kCommWeightsFile);
  comm.net = files.comm->to_plain();
  if (comm.form == CommForm::kHierarchical) {
    const auto& range = require_member(meta["comm"], "concave_units", source, "comm");
    const int hidden = comm.net.layers.front().outputs;
    if (!range.is_array() || range.size() != 2) throw_field_error(source, "comm.concave_units", "must be [begin, end]", range);
    DenseLayer& first = comm.net.layers.front();
    first.concave_begin = static_cast<int>(read_int64(range[0], source, "comm.concave_units[0]", 0, hidden));
    first.concave_end = static_cast<int>(read_int64(range[1], source, "comm.concave_units[1]", first.concave_begin, hidden));
    for (int input = 0; input < kHierCommMonotoneInputs; ++input) {
      if (!mlp_non_decreasing_in(comm.net, input)) {
        throw InputError(fmt::format("{}: the hierarchical all-to-all network has negative weights on the path of its "
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
  auto model = std::make_unique<NeuralCostModel>("neural:" + name, std::move(files.compute_spec), std::move(files.comm_spec));
  model->set_hardware(hardware_from_model_meta(files.meta));
  if (model->comm_spec().structure_only) model->plan_for_hardware(model->comm_spec().fabric);
  return model;
}

}  // namespace shardplan
