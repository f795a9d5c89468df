#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "shardplan/core/bundled_path.hpp"
#include "shardplan/cost_model/model_location.hpp"

namespace shardplan {

std::string resolve_model_dir(const std::string& dir_or_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dir_or_name, ec) || dir_or_name.empty() || dir_or_name.find('/') != std::string::npos) {
    return dir_or_name;
  }
  const std::string name = dir_or_name == kFormerCpuModelName ? kCpuModelName : dir_or_name;
  std::string dir = find_bundled_model_dir(name);
  if (!dir.empty() && name != dir_or_name) {
    spdlog::warn("model \"{}\" is now named \"{}\" (the CPU model); reading {}", dir_or_name, name, dir);
  }
  return dir.empty() ? dir_or_name : dir;
}

std::vector<std::string> model_directory_files(const std::string& dir) {
  const std::filesystem::path root(dir);
  return {(root / kModelMetaFile).string(), (root / kComputeWeightsFile).string(), (root / kCommWeightsFile).string()};
}

std::string find_bundled_model_dir(const std::string& name) {
  std::string meta = find_bundled_path("models/" + name + "/" + kModelMetaFile);
  return meta.empty() ? "" : std::filesystem::path(meta).parent_path().string();
}

}  // namespace shardplan
