#pragma once
// Running another program and waiting for it. No JSON, no LibTorch.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace shardplan {

struct ProcessResult {
  int exit_code = 0;       // the program's exit status; 128 + N when signal N ended it
  bool timed_out = false;  // it ran past the timeout and was killed, with everything it started
  std::string output;      // what it wrote on stdout
  std::string errors;      // what it wrote on stderr
};

// The end of a program's stderr: its own last words, not the traceback above them.
std::string tail_of(const std::string& text, std::size_t max_chars = 2000);

// Runs `argv` (argv[0] looked up on PATH when it has no '/') with `environment` (NAME=value entries)
// added to this process's, stdin closed, in a process group of its own, and waits for it: at most
// `timeout_seconds` when given, then the group is killed. Throws RuntimeFailure when it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment = {},
                          std::optional<double> timeout_seconds = std::nullopt);

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

// A program kept running to answer requests: a line to its stdin, a line back from its stdout. Its
// stderr goes to a file, read back when it fails. Destroying it closes its stdin and waits for it to
// exit (at most a few seconds, then it is killed).
class LineProcess {
 public:
  LineProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment);
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  // Sends `line` (a newline is added) and returns the next line it writes, without the newline. Throws
  // RuntimeFailure, carrying the end of its stderr, when it has exited or says nothing within
  // `timeout_seconds`.
  std::string ask(const std::string& line, double timeout_seconds);
  // The next line it writes, as ask() without sending anything.
  std::string read_line(double timeout_seconds);

 private:
  [[noreturn]] void fail(const std::string& what);

  std::string program_;
  TemporaryDirectory streams_{"shard-plan-worker"};  // its stderr, kept to explain a failure
  std::string stderr_path_;
  int pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_;  // read but not yet returned
};

}  // namespace shardplan
