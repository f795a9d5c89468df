#pragma once
// Facts recorded with every measurement, so data can be traced to where and when it was taken.
#include <nlohmann/json.hpp>
#include <string>

namespace shardplan {

std::string utc_now();    // "2026-11-21T09:36:57Z"
std::string host_name();  // "unknown" when unavailable
// The 1-minute load average now (null when unavailable): on a shared machine, other work inflates timings.
nlohmann::json load_average();

std::string cpu_model();
// The device's model: the GPU's (nvidia_gpu_model) for "cuda", else the CPU's.
std::string device_model(const std::string& device);
// LibTorch's C++ API does not name the GPU; NVIDIA's driver does, in each GPU's folder under
// /proc/driver/nvidia/gpus (a line "Model: NVIDIA H100 80GB HBM3"). The first GPU's by bus id; empty
// when there is none.
std::string nvidia_gpu_model(const std::string& driver_gpus_dir = "/proc/driver/nvidia/gpus");

}  // namespace shardplan
