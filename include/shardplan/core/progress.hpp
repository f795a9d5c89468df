#pragma once
// Progress of long work on stderr: a bar with ETA that redraws in place when stderr is a terminal,
// plain periodic lines when it is not (logs, CI), nothing when quiet.
#include <chrono>
#include <cstdint>
#include <string>

namespace shardplan {

class Progress {
 public:
  // `total` units of work named `what` ("samples", "epochs"); `done` already finished (resumed work).
  Progress(std::string what, int64_t total, int64_t done = 0, bool quiet = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Records `done` finished units; `note` is appended (a loss, the last latency).
  void update(int64_t done, const std::string& note = "");
  // Final line; called by the destructor if not before.
  void finish();

 private:
  void print(bool final);

  std::string what_;
  int64_t total_;
  int64_t start_done_;
  int64_t done_;
  std::string note_;
  bool quiet_;
  bool terminal_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

}  // namespace shardplan
