#include <unistd.h>

#include <filesystem>

#include "shardplan/cost_model_io.hpp"

namespace shardplan {

std::string find_bundled_path(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path bin = exe.parent_path();
  // A build tree (build/shard-plan -> models/default) or an install (bin/ -> share/shard-plan/models).
  for (const fs::path& root : {bin.parent_path(), bin.parent_path() / "share" / "shard-plan", bin.parent_path().parent_path()}) {
    if (fs::exists(root / relative, ec)) return (root / relative).string();
  }
  return "";
}

std::string find_default_model_dir() {
  std::string dir = find_bundled_path("models/default/meta.json");
  return dir.empty() ? "" : std::filesystem::path(dir).parent_path().string();
}

}  // namespace shardplan
