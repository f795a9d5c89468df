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

// run_cli in two halves, for a test that acts on the process while it runs (a signal): start_cli
// returns its pid, with stdout and stderr going to files in `capture`; finish_cli waits for it.
int start_cli(const std::vector<std::string>& args, const TempDir& capture);
CliResult finish_cli(int pid, const TempDir& capture);

std::string read_file(const std::filesystem::path& path);
std::string source_path(const std::string& relative);  // a path in the source tree

}  // namespace shardplan::e2e
