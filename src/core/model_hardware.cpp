#include "shardplan/core/model_hardware.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace shardplan {

namespace {

std::string string_at(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return "";
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

const nlohmann::json& object_at(const nlohmann::json& doc, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!doc.is_object()) return empty;
  auto it = doc.find(key);
  return it != doc.end() && it->is_object() ? *it : empty;
}

std::vector<int> world_sizes_at(const nlohmann::json& doc) {
  std::vector<int> sizes;
  if (!doc.is_array()) return sizes;
  for (const auto& w : doc) {
    if (w.is_number_integer() && w.get<int64_t>() >= 2 && w.get<int64_t>() <= (1 << 20)) sizes.push_back(w.get<int>());
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string world_size_range(const std::vector<int>& sizes) {
  if (sizes.empty()) return "no measured world size";
  if (sizes.size() == 1) return fmt::format("{} ranks", sizes.front());
  return fmt::format("{}-{} ranks", sizes.front(), sizes.back());
}

}  // namespace

std::string describe_hardware(const ModelHardware& h) {
  if (h.compute_device_model.empty()) return h.note.empty() ? "unknown hardware" : h.note;
  std::string out =
      fmt::format("compute {} ({})", h.compute_device.empty() ? "device" : h.compute_device, h.compute_device_model);
  if (!h.compute_kernel.empty()) out += ", kernel " + h.compute_kernel;
  if (!h.calibrated_on.empty()) out += fmt::format(", calibrated {}", h.calibrated_on.substr(0, 10));
  if (!h.comm_world_sizes.empty()) {
    out += fmt::format("; all-to-all {}{}, {}", h.comm_backend.empty() ? "" : h.comm_backend + " on ",
                       h.comm_device_model.empty() ? "unknown device" : h.comm_device_model,
                       world_size_range(h.comm_world_sizes));
    if (!h.comm_fabric.empty()) out += fmt::format(" (profile {})", h.comm_fabric);
    if (!h.comm_corrected_on.empty() && !h.comm_structure_only)
      out += fmt::format(", corrected on {}", h.comm_corrected_on);
  }
  if (h.comm_structure_only) {
    out += fmt::format("; all-to-all for {}: the hierarchical estimate from its profile's figures, not measured",
                       h.planning_hardware);
  }
  return out;
}

nlohmann::ordered_json hardware_to_json(const ModelHardware& h) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!h.compute_device_model.empty() || !h.compute_device.empty()) {
    doc["compute"] = {{"device", h.compute_device}, {"device_model", h.compute_device_model}};
    if (!h.compute_kernel.empty()) doc["compute"]["kernel"] = h.compute_kernel;
    if (h.compute_batch > 0) doc["compute"]["batch_size"] = h.compute_batch;
  }
  if (!h.comm_world_sizes.empty() || !h.comm_device_model.empty()) {
    doc["comm"] = {
        {"device_model", h.comm_device_model}, {"backend", h.comm_backend}, {"world_sizes", h.comm_world_sizes}};
    if (!h.comm_fabric.empty()) doc["comm"]["profile"] = h.comm_fabric;
    // A correction describes its host's links: planned on a profile's structure, it is not applied.
    if (!h.comm_corrected_on.empty() && !h.comm_structure_only) doc["comm"]["corrected_on"] = h.comm_corrected_on;
    if (h.comm_gpus_per_host > 0) doc["comm"]["gpus_per_host"] = h.comm_gpus_per_host;
  }
  if (!h.planning_hardware.empty()) {
    doc["planned_for"] = {{"profile", h.planning_hardware},
                          {"comm", h.comm_structure_only ? "hierarchical estimate from the profile's figures"
                                                         : "measured on this profile"}};
  }
  if (!h.calibrated_on.empty()) doc["calibrated_on"] = h.calibrated_on;
  if (!h.note.empty()) doc["note"] = h.note;
  return doc;
}

namespace {

// Models measured before the kernel was recorded were all timed with LibTorch's embedding_bag.
void default_kernel(ModelHardware& h) {
  if (h.compute_kernel.empty() && !h.compute_device_model.empty()) h.compute_kernel = "embedding_bag";
}

}  // namespace

ModelHardware hardware_from_model_meta(const nlohmann::json& meta) {
  ModelHardware h;
  const nlohmann::json& measured = object_at(object_at(object_at(meta, "data"), "compute"), "provenance");
  if (const auto batch = measured.find("batch_size"); batch != measured.end() && batch->is_number_integer())
    h.compute_batch = batch->get<int64_t>();
  const nlohmann::json& section = object_at(meta, "hardware");
  if (!section.empty()) {
    const nlohmann::json& compute = object_at(section, "compute");
    const nlohmann::json& comm = object_at(section, "comm");
    h.compute_device = string_at(compute, "device");
    h.compute_device_model = string_at(compute, "device_model");
    h.compute_kernel = string_at(compute, "kernel");
    if (const auto batch = compute.find("batch_size"); batch != compute.end() && batch->is_number_integer())
      h.compute_batch = batch->get<int64_t>();  // a calibration's, which may differ from its base's data
    default_kernel(h);
    h.comm_device_model = string_at(comm, "device_model");
    h.comm_backend = string_at(comm, "backend");
    if (comm.contains("world_sizes")) h.comm_world_sizes = world_sizes_at(comm["world_sizes"]);
    const nlohmann::json& job = object_at(comm, "timed_on");
    if (const auto g = job.find("gpus_per_host"); g != job.end() && g->is_number_integer() && g->get<int>() > 0)
      h.comm_gpus_per_host = g->get<int>();
    h.comm_fabric = string_at(object_at(object_at(meta, "comm"), "fabric"), "name");
    // Only while the model still carries the correction it names.
    if (object_at(meta, "comm").contains("correction")) h.comm_corrected_on = string_at(comm, "corrected_on");
    h.calibrated_on = string_at(section, "calibrated_on");
    h.note = string_at(section, "note");
    return h;
  }
  // Models trained before the section: the compute data's provenance, and the comm data's world sizes.
  const nlohmann::json& provenance = object_at(object_at(object_at(meta, "data"), "compute"), "provenance");
  h.compute_device = string_at(provenance, "device");
  h.compute_device_model = string_at(provenance, "device_model");
  default_kernel(h);
  const nlohmann::json& comm = object_at(meta, "comm");
  if (comm.contains("world_sizes")) h.comm_world_sizes = world_sizes_at(comm["world_sizes"]);
  return h;
}

bool same_compute_hardware(const ModelHardware& hardware, const std::string& device, const std::string& device_model) {
  if (hardware.compute_device_model.empty() || device_model.empty()) return true;
  if (!hardware.compute_device.empty() && !device.empty() && hardware.compute_device != device) return false;
  return hardware.compute_device_model == device_model;
}

std::string host_layout_warning(const ModelHardware& hardware, int devices_per_host) {
  const int measured = hardware.comm_gpus_per_host;
  if (measured == 0 || devices_per_host == measured || hardware.comm_structure_only) return "";
  return fmt::format(
      "the cost model's all-to-alls were timed with {} GPUs per host and this plan has {}: the share of its "
      "traffic that crosses hosts differs, so its communication costs are those of another cluster; calibrate "
      "on this layout (docs/cluster-model.md)",
      measured, devices_per_host);
}

std::string device_model_warning(const ModelHardware& hardware, const std::string& device_model) {
  if (same_compute_hardware(hardware, "", device_model)) return "";
  return fmt::format(
      "the cost model's compute was timed on {} ({}) and this plan is for {}: its compute costs are another "
      "device's, so its choices may not be the best for yours; calibrate on this GPU (docs/cluster-model.md)",
      hardware.compute_device_model, hardware.compute_device.empty() ? "device" : hardware.compute_device,
      device_model);
}

std::string comm_extrapolation_warning(const ModelHardware& hardware, int devices) {
  const int measured = hardware.max_comm_world_size();
  if (measured == 0 || devices <= measured || hardware.comm_structure_only) return "";
  if (!hardware.comm_fabric.empty()) {
    return fmt::format(
        "{} GPUs is beyond the all-to-alls the cost model measured (at most {} ranks, {}): its learned "
        "correction is held at that size and the hierarchical structure of profile {} carries the rest; "
        "for times on your cluster, plan with its hardware profile",
        devices, measured, hardware.comm_device_model.empty() ? "unknown device" : hardware.comm_device_model,
        hardware.comm_fabric);
  }
  return fmt::format(
      "{} GPUs is beyond the all-to-alls the cost model measured (at most {} ranks, {}): its "
      "communication costs are extrapolated; read them as a ranking, not as times",
      devices, measured, hardware.comm_device_model.empty() ? "unknown device" : hardware.comm_device_model);
}

}  // namespace shardplan
