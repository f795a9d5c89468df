#pragma once
// A private directory in the system's temporary directory, removed with everything in it.
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "shardplan/core/errors.hpp"

namespace shardplan {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "shard-plan-comm-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw RuntimeFailure("cannot create a scratch directory in " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

}  // namespace shardplan
