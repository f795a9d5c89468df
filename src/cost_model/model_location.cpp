#include <unistd.h>

#include <filesystem>

#include "shardplan/cost_model_io.hpp"

namespace shardplan {

std::string find_default_model_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path bin = exe.parent_path();
  // A build tree (build/shard-plan -> models/default) or an install (bin/ -> share/shard-plan/models).
  for (const fs::path& candidate : {bin.parent_path() / "models" / "default",
                                    bin.parent_path() / "share" / "shard-plan" / "models" / "default",
                                    bin.parent_path().parent_path() / "models" / "default"}) {
    if (fs::exists(candidate / "meta.json", ec)) return candidate.string();
  }
  return "";
}

}  // namespace shardplan
