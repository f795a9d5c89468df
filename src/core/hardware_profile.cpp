#include "shardplan/core/hardware_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "shardplan/core/bundled_path.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

constexpr double kBytesPerMsPerGBps = 1e6;  // 1 GB/s (decimal) moves 10^6 bytes per ms
constexpr double kMaxGBps = 1e6;
constexpr double kMaxLatencyUs = 1e6;

LinkFigures read_link(const nlohmann::json& doc, const std::string& source, const std::string& path) {
  read_object(doc, source, path);
  LinkFigures link;
  link.bandwidth_gb_per_s = read_double(require_member(doc, "bandwidth_GBps", source, path), source,
                                        path + ".bandwidth_GBps", 1e-9, kMaxGBps);
  if (const auto* latency = find_member(doc, "peer_latency_us")) {
    link.peer_latency_us = read_double(*latency, source, path + ".peer_latency_us", 0.0, kMaxLatencyUs);
  }
  if (const auto* shared = find_member(doc, "shared_by_host"))
    link.shared_by_host = read_bool(*shared, source, path + ".shared_by_host");
  return link;
}

}  // namespace

HardwareProfile parse_hardware_profile(const nlohmann::json& doc, const std::string& source) {
  read_object(doc, source, "(top level)");
  const std::string format = read_string(require_member(doc, "format", source, ""), source, "format");
  if (format != kHardwareFormat)
    throw_field_error(source, "format", fmt::format("expected \"{}\"", kHardwareFormat), doc["format"]);
  HardwareProfile p;
  p.source_path = source;
  p.name = read_string(require_member(doc, "name", source, ""), source, "name");
  if (p.name.empty()) throw_field_error(source, "name", "must not be empty", doc["name"]);
  if (const auto* d = find_member(doc, "description")) p.description = read_string(*d, source, "description");
  if (const auto* d = find_member(doc, "device_model")) p.device_model = read_string(*d, source, "device_model");
  p.kind = read_string(require_member(doc, "kind", source, ""), source, "kind");
  if (p.kind != "measured" && p.kind != "published") {
    throw_field_error(source, "kind", "must be \"measured\" or \"published\"", doc["kind"]);
  }
  p.gpus_per_host = static_cast<int>(
      read_int64(require_member(doc, "gpus_per_host", source, ""), source, "gpus_per_host", 1, 65'536));
  const auto& memory = require_member(doc, "memory_per_gpu", source, "");
  if (memory.is_string()) {
    p.memory_per_gpu_bytes = parse_byte_size(memory.get<std::string>(), source + ": memory_per_gpu");
  } else {
    p.memory_per_gpu_bytes = read_int64(memory, source, "memory_per_gpu", 1, int64_t{1} << 50);
  }
  p.intra_host = read_link(require_member(doc, "intra_host", source, ""), source, "intra_host");
  p.inter_host = read_link(require_member(doc, "inter_host", source, ""), source, "inter_host");
  if (const auto* shared = find_member(doc, "host_bandwidth_GBps"); shared != nullptr && !shared->is_null()) {
    p.host_bandwidth_gb_per_s = read_double(*shared, source, "host_bandwidth_GBps", 1e-9, kMaxGBps);
  }
  if (const auto* adds = find_member(doc, "host_bandwidth_adds"))
    p.host_bandwidth_adds = read_bool(*adds, source, "host_bandwidth_adds");
  if (const auto* link = find_member(doc, "host_link"); link != nullptr && !link->is_null()) {
    read_object(*link, source, "host_link");
    p.host_link_gb_per_s = read_double(require_member(*link, "bandwidth_GBps", source, "host_link"), source,
                                       "host_link.bandwidth_GBps", 1e-9, kMaxGBps);
  }
  if (const auto* ddr = find_member(doc, "ddr_per_host"); ddr != nullptr && !ddr->is_null()) {
    p.ddr_per_host_bytes = ddr->is_string() ? parse_byte_size(ddr->get<std::string>(), source + ": ddr_per_host")
                                            : read_int64(*ddr, source, "ddr_per_host", 1, int64_t{1} << 56);
  }
  if (const auto* sources = find_member(doc, "sources")) read_object(*sources, source, "sources");
  return p;
}

std::string hardware_profile_path(const std::string& name_or_file) {
  std::error_code ec;
  const bool looks_like_path = name_or_file.find('/') != std::string::npos ||
                               fs::path(name_or_file).extension() == ".json" || fs::is_regular_file(name_or_file, ec);
  return looks_like_path ? name_or_file : find_bundled_path("data/hardware/" + name_or_file + ".json");
}

HardwareProfile load_hardware_profile(const std::string& name_or_file) {
  std::error_code ec;
  const std::string path = hardware_profile_path(name_or_file);
  if (path != name_or_file) {
    if (path.empty()) {
      std::vector<std::string> names = shipped_hardware_profiles();
      throw SettingError(
          "hardware profile",
          fmt::format("no profile named '{}' (shipped: {}); pass a profile file's path instead", name_or_file,
                      names.empty() ? "none found" : fmt::format("{}", fmt::join(names, ", "))));
    }
  } else if (!fs::is_regular_file(path, ec)) {
    throw SettingError("hardware profile", fmt::format("{}: no such file", path));
  }
  return parse_hardware_profile(read_json_file(path), path);
}

std::vector<std::string> shipped_hardware_profiles() {
  std::vector<std::string> names;
  std::string any = find_bundled_path("data/hardware");
  if (any.empty()) return names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(any, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

CommFabric fabric_of(const HardwareProfile& profile, int64_t batch_size) {
  CommFabric f;
  f.name = profile.name;
  f.devices_per_host = profile.gpus_per_host;
  f.intra_bytes_per_ms = profile.intra_host.bandwidth_gb_per_s * kBytesPerMsPerGBps;
  f.intra_peer_latency_ms = profile.intra_host.peer_latency_us / 1000.0;
  f.inter_bytes_per_ms = profile.inter_host.bandwidth_gb_per_s * kBytesPerMsPerGBps;
  f.inter_peer_latency_ms = profile.inter_host.peer_latency_us / 1000.0;
  f.inter_shared_by_host = profile.inter_host.shared_by_host;
  f.host_bytes_per_ms = profile.host_bandwidth_gb_per_s * kBytesPerMsPerGBps;
  f.host_adds = profile.host_bandwidth_adds;
  f.batch_size = batch_size;
  return f;
}

nlohmann::json fabric_to_json(const CommFabric& f) {
  nlohmann::json doc = {
      {"name", f.name},
      {"gpus_per_host", f.devices_per_host},
      {"intra_host",
       {{"bandwidth_GBps", f.intra_bytes_per_ms / kBytesPerMsPerGBps},
        {"peer_latency_us", f.intra_peer_latency_ms * 1000.0}}},
      {"inter_host",
       {{"bandwidth_GBps", f.inter_bytes_per_ms / kBytesPerMsPerGBps},
        {"peer_latency_us", f.inter_peer_latency_ms * 1000.0},
        {"shared_by_host", f.inter_shared_by_host}}},
      {"host_bandwidth_GBps",
       f.host_bytes_per_ms > 0 ? nlohmann::json(f.host_bytes_per_ms / kBytesPerMsPerGBps) : nlohmann::json(nullptr)},
      {"batch_size", f.batch_size}};
  // Only when set: models and profiles written before it read as the bound they were fitted with.
  if (f.host_adds) doc["host_bandwidth_adds"] = true;
  return doc;
}

CommFabric fabric_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path) {
  read_object(doc, source, path);
  CommFabric f;
  f.name = read_string(require_member(doc, "name", source, path), source, path + ".name");
  f.devices_per_host = static_cast<int>(
      read_int64(require_member(doc, "gpus_per_host", source, path), source, path + ".gpus_per_host", 1, 65'536));
  LinkFigures intra = read_link(require_member(doc, "intra_host", source, path), source, path + ".intra_host");
  LinkFigures inter = read_link(require_member(doc, "inter_host", source, path), source, path + ".inter_host");
  f.intra_bytes_per_ms = intra.bandwidth_gb_per_s * kBytesPerMsPerGBps;
  f.intra_peer_latency_ms = intra.peer_latency_us / 1000.0;
  f.inter_bytes_per_ms = inter.bandwidth_gb_per_s * kBytesPerMsPerGBps;
  f.inter_peer_latency_ms = inter.peer_latency_us / 1000.0;
  f.inter_shared_by_host = inter.shared_by_host;
  if (const auto* shared = find_member(doc, "host_bandwidth_GBps"); shared != nullptr && !shared->is_null()) {
    f.host_bytes_per_ms =
        read_double(*shared, source, path + ".host_bandwidth_GBps", 1e-9, kMaxGBps) * kBytesPerMsPerGBps;
  }
  if (const auto* adds = find_member(doc, "host_bandwidth_adds"))
    f.host_adds = read_bool(*adds, source, path + ".host_bandwidth_adds");
  f.batch_size =
      read_int64(require_member(doc, "batch_size", source, path), source, path + ".batch_size", 1, int64_t{1} << 40);
  return f;
}

}  // namespace shardplan
