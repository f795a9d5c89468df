#pragma once
// Which hardware a cost model describes: where its compute data and its communication data were measured.
// A cost model is only true for that hardware, so plans, reports and measurements name it, and callers
// warn when they step outside it (another device, more GPUs than any measured all-to-all).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardplan {

struct ModelHardware {
  std::string compute_device;         // "cpu" or "cuda"; empty when unknown
  std::string compute_device_model;   // "AMD EPYC", "NVIDIA H100 80GB HBM3"
  std::string compute_kernel;         // what timed it: "embedding_bag" (LibTorch's) or "fbgemm-tbe" (TorchRec's)
  std::string comm_device_model;      // where the all-to-alls were timed
  std::string comm_backend;           // "gloo", "nccl"
  std::vector<int> comm_world_sizes;  // the device counts whose all-to-alls were measured, ascending
  std::string calibrated_on;          // UTC date of the calibration that fitted the compute part; empty: none
  std::string note;                   // what the model is when it was not measured ("analytic estimate")
  std::string comm_fabric;            // the hardware profile the comm data's structure describes (hierarchical models)
  std::string planning_hardware;      // the --hardware profile planned for; empty: the measured hardware
  bool comm_structure_only = false;   // planning_hardware was not measured: the all-to-all is the structure's estimate
  int64_t compute_batch = 0;          // the global batch its compute was measured at (samples); 0: unknown
  std::string comm_corrected_on;  // where calibrate --comm-ranks timed the correction ("4 ranks of HOST (AMD EPYC)":
                                  // host, CPU name)
  int comm_gpus_per_host = 0;     // the host layout a calibration job timed its all-to-alls on; 0: unknown

  bool known() const { return !compute_device_model.empty() || !note.empty(); }
  int max_comm_world_size() const { return comm_world_sizes.empty() ? 0 : comm_world_sizes.back(); }
};

// "compute cpu (AMD EPYC), kernel embedding_bag; all-to-all gloo on AMD EPYC, 2-8 ranks" (and ", calibrated
// 2026-11-22"); the note, or "unknown hardware", when nothing was measured.
std::string describe_hardware(const ModelHardware& hardware);

// The plan file's and meta.json's form: {"compute": {"device", "device_model", "kernel"}, "comm": {"device_model",
// "backend", "world_sizes"}, "calibrated_on"}; only what is known.
nlohmann::ordered_json hardware_to_json(const ModelHardware& hardware);

// Reads a model directory's meta.json: its "hardware" section, or for models written before it, what the
// training data's provenance says (data.compute.provenance, comm.world_sizes). Unknown fields stay empty,
// but for the kernel of a measured model that names none: embedding_bag, the only one before fbgemm-tbe.
ModelHardware hardware_from_model_meta(const nlohmann::json& meta);

// Whether a measurement on `device_model` describes the hardware the model was measured on. False only
// when both are known and differ.
bool same_compute_hardware(const ModelHardware& hardware, const std::string& device, const std::string& device_model);

// Why a plan with `devices_per_host` GPUs per host prices all-to-alls timed on another host layout (a
// calibration job's); empty when the layouts agree or the model names none.
std::string host_layout_warning(const ModelHardware& hardware, int devices_per_host);

// Why a plan for GPUs named `device_model` (torch.cuda.get_device_name()) prices compute timed on another
// device; empty when they agree or either is unknown.
std::string device_model_warning(const ModelHardware& hardware, const std::string& device_model);

// Why a plan for `devices` GPUs leans on extrapolated all-to-alls: more devices than any measured world
// size. Empty when the comm data covers it, its world sizes are unknown, or the all-to-all is the
// structure's estimate for other hardware (describe_hardware says so).
std::string comm_extrapolation_warning(const ModelHardware& hardware, int devices);

}  // namespace shardplan
