#include "model_meta.hpp"

#include <fmt/format.h>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/cost_model/cost_features.hpp"
#include "shardplan/cost_model/model_location.hpp"

namespace shardplan {

namespace {

std::vector<int> read_widths(const nlohmann::json& meta, const std::string& section, const char* key,
                             const std::string& source) {
  const auto& list = read_array(require_member(meta[section], key, source, section), source, section + "." + key);
  std::vector<int> widths;
  for (std::size_t i = 0; i < list.size(); ++i) {
    widths.push_back(
        static_cast<int>(read_int64(list[i], source, fmt::format("{}.{}[{}]", section, key, i), 1, kMaxLayerWidth)));
  }
  if (widths.empty()) throw_field_error(source, section + "." + key, "must list at least one layer", list);
  return widths;
}

Normaliser read_normaliser(const nlohmann::json& section, const std::string& name, int size,
                           const std::string& source) {
  Normaliser norm;
  for (const char* key : {"feature_mean", "feature_std"}) {
    const auto& list = read_array(require_member(section, key, source, name), source, name + "." + key);
    if (static_cast<int>(list.size()) != size) {
      throw_field_error(source, name + "." + key,
                        fmt::format("must have {} values (feature schema {})", size, kFeatureSchemaVersion), list);
    }
    auto& out = std::string(key) == "feature_mean" ? norm.mean : norm.std;
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(
          static_cast<float>(read_double(list[i], source, fmt::format("{}.{}[{}]", name, key, i), -1e30, 1e30)));
    }
  }
  for (std::size_t i = 0; i < norm.std.size(); ++i) {
    if (!(norm.std[i] > 0))
      throw_field_error(source, fmt::format("{}.feature_std[{}]", name, i), "must be positive", norm.std[i]);
  }
  return norm;
}

void read_header(const nlohmann::json& meta, const std::string& source) {
  read_object(meta, source, "(top level)");
  if (meta.value("format", "") != kModelFormat) {
    throw_field_error(source, "format", fmt::format("expected \"{}\"", kModelFormat),
                      meta.value("format", nlohmann::json()));
  }
  int64_t schema = read_int64(require_member(meta, "feature_schema", source, ""), source, "feature_schema", 0, 1000);
  if (schema != kFeatureSchemaVersion) {
    throw InputError(fmt::format("{}: feature_schema {} is not this build's {}; re-train the model", source, schema,
                                 kFeatureSchemaVersion));
  }
  read_object(require_member(meta, "compute", source, ""), source, "compute");
  read_object(require_member(meta, "comm", source, ""), source, "comm");
}

void read_compute(const nlohmann::json& meta, const std::string& source, ModelMeta& out) {
  ComputeModelSpec& compute = out.compute;
  compute.features = read_normaliser(meta["compute"], "compute", kComputeFeatures, source);
  compute.interaction_range =
      static_cast<float>(read_double(require_member(meta["compute"], "interaction_range", source, "compute"), source,
                                     "compute.interaction_range", 0.0, 10.0));
  const auto* step_cost = find_member(meta["compute"], "step_cost_ms");
  if (step_cost != nullptr) {
    compute.step_cost_ms = static_cast<float>(read_double(*step_cost, source, "compute.step_cost_ms", 0.0, 1e6));
  }
  out.learns_step_cost = step_cost != nullptr;
  if (const auto* context = find_member(meta["compute"], "context")) {
    std::string name = read_string(*context, source, "compute.context");
    if (name != "latency-weighted mean embedding") {
      throw_field_error(source, "compute.context", "unknown (expected \"latency-weighted mean embedding\")", *context);
    }
    compute.latency_weighted_context = true;
  }
  out.shard_widths = read_widths(meta, "compute", "shard_layers", source);
  out.head_widths = read_widths(meta, "compute", "head_layers", source);
}

void read_hierarchical_comm(const nlohmann::json& section, const std::string& source, CommModelSpec& comm) {
  comm.fabric = fabric_from_json(require_member(section, "fabric", source, "comm"), source, "comm.fabric");
  validate_fabric(comm.fabric, source + ": comm.fabric");
  if (const auto* allreduce = find_member(section, "allreduce")) {
    comm.allreduce = allreduce_fit_from_json(*allreduce, source, "comm.allreduce");
  }
  if (const auto* rowwise = find_member(section, "rowwise")) {
    comm.rowwise = rowwise_fit_from_json(*rowwise, source, "comm.rowwise");
  }
  if (const auto* context = find_member(section, "backward_context")) {
    const std::string value = read_string(*context, source, "comm.backward_context");
    if (value != kBackwardWithoutDelays) {
      throw_field_error(source, "comm.backward_context",
                        fmt::format("unknown (expected \"{}\")", kBackwardWithoutDelays), *context);
    }
    comm.backward_without_delays = true;
  }
  if (const auto* structure_only = find_member(section, "structure_only")) {
    if (!structure_only->is_boolean())
      throw_field_error(source, "comm.structure_only", "must be true or false", *structure_only);
    comm.structure_only = structure_only->get<bool>();
  }
  for (const char* key : {"input_min", "input_max"}) {
    const auto& list = read_array(require_member(section, key, source, "comm"), source, std::string("comm.") + key);
    if (static_cast<int>(list.size()) != kHierCommFeatures) {
      throw_field_error(source, std::string("comm.") + key, fmt::format("must have {} values", kHierCommFeatures),
                        list);
    }
    auto& out = std::string(key) == "input_min" ? comm.input_min : comm.input_max;
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(static_cast<float>(read_double(list[i], source, fmt::format("comm.{}[{}]", key, i), -1e30, 1e30)));
    }
  }
}

void read_comm(const nlohmann::json& meta, const std::string& source, ModelMeta& out) {
  const nlohmann::json& section = meta["comm"];
  CommModelSpec& comm = out.comm;
  out.comm_inputs = kCommFeatures;
  if (const auto* form = find_member(section, "form")) {
    if (read_string(*form, source, "comm.form") != kHierarchicalCommForm) {
      throw_field_error(source, "comm.form", fmt::format("unknown (expected \"{}\")", kHierarchicalCommForm), *form);
    }
    comm.form = CommForm::kHierarchical;
    out.comm_inputs = kHierCommFeatures;
    read_hierarchical_comm(section, source, comm);
  }
  if (const auto* correction = find_member(section, "correction")) {
    comm.correction = comm_correction_from_json(*correction, source, "comm.correction");
  }
  comm.features = read_normaliser(section, "comm", out.comm_inputs, source);
  for (int k = 0; k < 2; ++k) {
    for (const char* key : {"target_mean", "target_std"}) {
      const auto& list = require_member(section, key, source, "comm");
      if (!list.is_array() || list.size() != 2)
        throw_field_error(source, std::string("comm.") + key, "must be [fw, bw]", list);
      double value =
          read_double(list[static_cast<std::size_t>(k)], source, fmt::format("comm.{}[{}]", key, k), -1e6, 1e6);
      (std::string(key) == "target_mean" ? comm.target_mean : comm.target_std)[static_cast<std::size_t>(k)] =
          static_cast<float>(value);
    }
  }
  out.comm_widths = read_widths(meta, "comm", "layers", source);
  out.comm_widths.push_back(2);
  if (comm.form == CommForm::kHierarchical) {
    const auto& range = require_member(section, "concave_units", source, "comm");
    const int hidden = out.comm_widths.front();
    if (!range.is_array() || range.size() != 2)
      throw_field_error(source, "comm.concave_units", "must be [begin, end]", range);
    out.concave_begin = static_cast<int>(read_int64(range[0], source, "comm.concave_units[0]", 0, hidden));
    out.concave_end =
        static_cast<int>(read_int64(range[1], source, "comm.concave_units[1]", out.concave_begin, hidden));
  }
}

}  // namespace

ModelMeta parse_model_meta(const nlohmann::json& meta, const std::string& source) {
  read_header(meta, source);
  ModelMeta out;
  read_compute(meta, source, out);
  read_comm(meta, source, out);
  return out;
}

}  // namespace shardplan
