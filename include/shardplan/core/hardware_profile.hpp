#pragma once
// Hardware profiles (`--hardware NAME|FILE`, format shard-plan-hardware/1): GPUs per host, GPU memory,
// and the links an all-to-all uses, with where each figure comes from. Shipped profiles live in
// data/hardware/ (docs/hardware.md). The comm model's structure (comm_structure.hpp) reads its figures
// from one, and a model directory records the one its comm data was measured on.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/core/comm_fabric.hpp"

namespace shardplan {

inline constexpr const char* kHardwareFormat = "shard-plan-hardware/1";

struct LinkFigures {
  double bandwidth_gb_per_s = 0.0;  // per GPU, per direction, decimal GB
  double peer_latency_us = 0.0;     // added per peer reached over this link
  bool shared_by_host = false;      // inter_host only: one port per host that its GPUs share
};

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string device_model;  // the GPU, as torch.cuda.get_device_name() names it; empty: the profile does not say
  std::string kind;          // "measured" (fitted to collected data) or "published" (datasheets)
  std::string source_path;   // the file it was read from
  int gpus_per_host = 8;
  int64_t memory_per_gpu_bytes = 0;
  LinkFigures intra_host;
  LinkFigures inter_host;
  double host_bandwidth_gb_per_s = 0.0;  // shared by a host's GPUs; 0: not shared
  bool host_bandwidth_adds = false;      // CommFabric::host_adds
  // Each GPU's link to its host's memory, GB/s each way, as UVM row reads and write-backs cross it
  // ("host_link": {"bandwidth_GBps"}); 0: the profile does not say.
  double host_link_gb_per_s = 0.0;
  int64_t ddr_per_host_bytes = 0;  // "ddr_per_host"; 0: the profile does not say
};

// Reads a profile document; a bad field throws InputError naming the source, the field and the value.
HardwareProfile parse_hardware_profile(const nlohmann::json& doc, const std::string& source);

// `name_or_file`: a path to a profile file, or the name of a shipped one (data/hardware/NAME.json).
// Throws SettingError("hardware profile") for a name no shipped profile has or a missing file.
HardwareProfile load_hardware_profile(const std::string& name_or_file);
// The file load_hardware_profile reads for it; empty for a name no shipped profile has.
std::string hardware_profile_path(const std::string& name_or_file);

// Names of the shipped profiles, sorted; empty when the data directory is not found.
std::vector<std::string> shipped_hardware_profiles();

// The structure's figures for a global batch of `batch_size` samples.
CommFabric fabric_of(const HardwareProfile& profile, int64_t batch_size);

// A model directory's "comm.fabric": {name, gpus_per_host, intra_host, inter_host, host_bandwidth_GBps,
// batch_size} in the profile's units.
nlohmann::json fabric_to_json(const CommFabric& fabric);
CommFabric fabric_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path);

}  // namespace shardplan
