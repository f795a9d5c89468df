#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "shardplan/cost_model_io.hpp"

namespace shardplan {

std::string find_bundled_path(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> roots;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // Beside the executable: a build tree inside the sources (build/shard-plan -> models/NAME), an
    // install (bin/ -> share/shard-plan/models), or a build tree one level deeper.
    fs::path bin = exe.parent_path();
    roots = {bin.parent_path(), bin.parent_path() / "share" / "shard-plan", bin.parent_path().parent_path()};
  }
  // Then where this build installs to, and the sources it was configured from (a build directory anywhere).
#ifdef SHARDPLAN_INSTALLED_DATA_DIR
  roots.emplace_back(SHARDPLAN_INSTALLED_DATA_DIR);
#endif
#ifdef SHARDPLAN_CONFIGURED_SOURCE_DIR
  roots.emplace_back(SHARDPLAN_CONFIGURED_SOURCE_DIR);
#endif
  for (const fs::path& root : roots) {
    if (fs::exists(root / relative, ec)) return (root / relative).string();
  }
  return "";
}

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
