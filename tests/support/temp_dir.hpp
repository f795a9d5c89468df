#pragma once
// A fresh, empty directory for one test, removed with its content when the object dies.
#include <filesystem>
#include <string>
#include <vector>

namespace shardplan::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& root() const { return dir_; }
  // Writes `content` to `name` and returns its path.
  std::string write(const std::string& name, const std::string& content) const;
  // Names of the files in the directory (to prove nothing, not even a temporary, was left).
  std::vector<std::string> files() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace shardplan::testing
