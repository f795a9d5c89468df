#include "shardplan/costs/provenance.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

namespace shardplan {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buffer;
}

std::string host_name() {
  char buffer[256] = {};
  return ::gethostname(buffer, sizeof(buffer) - 1) == 0 ? buffer : "unknown";
}

nlohmann::json load_average() {
  double one_minute = 0.0;
  std::FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return nullptr;
  int read = std::fscanf(file, "%lf", &one_minute);
  std::fclose(file);
  return read == 1 ? nlohmann::json(one_minute) : nlohmann::json(nullptr);
}

namespace {

// The value of a /proc file's first "KEY<blanks>: value" line, leading blanks trimmed; empty when none.
std::string proc_field(const std::filesystem::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find_first_not_of(" \t", key.size());
    if (colon == std::string::npos || line[colon] != ':') continue;
    const auto value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

}  // namespace

std::string cpu_model() {
  const std::string model = proc_field("/proc/cpuinfo", "model name");
  return model.empty() ? "unknown CPU" : model;
}

std::string nvidia_gpu_model(const std::string& driver_gpus_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<fs::path> gpus;
  for (const auto& entry : fs::directory_iterator(driver_gpus_dir, error)) gpus.push_back(entry.path());
  std::sort(gpus.begin(), gpus.end());  // the lowest bus id first: cuda:0 in the default order
  for (const auto& gpu : gpus) {
    std::string model = proc_field(gpu / "information", "Model");
    if (!model.empty()) return model;
  }
  return "";
}

std::string device_model(const std::string& device) {
  if (device == "cuda") {
    std::string gpu = nvidia_gpu_model();
    return gpu.empty() ? "CUDA device (no NVIDIA driver information in /proc)" : gpu;
  }
  return cpu_model();
}

}  // namespace shardplan
