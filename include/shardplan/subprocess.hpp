#pragma once
// Running another program and waiting for it. No JSON, no LibTorch.
#include <string>
#include <vector>

namespace shardplan {

struct ProcessResult {
  int exit_code = 0;    // the program's exit status; 128 + N when signal N ended it
  std::string output;   // what it wrote on stdout
  std::string errors;   // what it wrote on stderr
};

// Runs `argv` (argv[0] looked up on PATH when it has no '/') with `environment` (NAME=value entries)
// added to this process's, stdin closed, and waits for it. Throws RuntimeFailure when it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment = {});

// A private directory under $TMPDIR (else /tmp), removed with everything in it when this goes out of scope.
class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shardplan
