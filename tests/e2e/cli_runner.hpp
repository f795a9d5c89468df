#pragma once
// Runs the shard-plan binary as a user would and captures what it prints.
#include <filesystem>
#include <string>
#include <vector>

namespace shardplan::e2e {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CliResult run_cli(const std::vector<std::string>& args);

// A fresh, empty directory removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  std::string write(const std::string& name, const std::string& content) const;
  // Names of the files in the directory (to prove nothing, not even a temporary, was left).
  std::vector<std::string> files() const;

 private:
  std::filesystem::path dir_;
};

std::string read_file(const std::filesystem::path& path);
std::string source_path(const std::string& relative);  // a path in the source tree

}  // namespace shardplan::e2e
