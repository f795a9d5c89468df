#pragma once
// Runs the shard-plan binary as a background process with a chosen environment, so tests can signal it,
// kill it, or time how long it takes to give up.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace shardplan::commtest {

using testing::TempDir;

// Launcher variables removed from every child's environment unless a test sets them.
extern const std::vector<std::string> kLauncherVariables;

class Process {
 public:
  // Starts SHARDPLAN_BINARY with `args`; `env` entries are added (over the launcher variables removed).
  Process(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});
  ~Process();  // kills the process if it still runs
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signal_number) const;
  // The exit code (128 + signal when killed), or nullopt if it still runs after `limit`.
  std::optional<int> wait_for(std::chrono::duration<double> limit);
  int wait() { return *wait_for(std::chrono::hours(1)); }
  std::string err() const;  // everything it wrote to stderr so far
  std::string out() const;  // and to stdout

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::filesystem::path capture_dir_;
};

std::string read_text(const std::string& path);
std::vector<std::string> read_lines(const std::string& path);

}  // namespace shardplan::commtest
