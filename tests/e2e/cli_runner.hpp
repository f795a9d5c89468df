#pragma once
// Runs the shard-plan binary as a user would and captures what it prints.
#include <filesystem>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace shardplan::e2e {

using testing::TempDir;

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CliResult run_cli(const std::vector<std::string>& args);

std::string read_file(const std::filesystem::path& path);
std::string source_path(const std::string& relative);  // a path in the source tree

}  // namespace shardplan::e2e
