#include "shardplan/core/bundled_path.hpp"

#include <unistd.h>

#include <filesystem>
#include <vector>

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

}  // namespace shardplan
