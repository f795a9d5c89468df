#pragma once
// The collector's watchdog: c10d bounds its own waits by the timeout, but not every path (a TCP store
// server whose workers never come, a process-group destructor joining a stuck thread). The watchdog turns
// any wait that outlives its limit into exit status 1 with a message, so a rank never hangs whatever its
// peers do. Plain C++.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace shardplan::collector {

class Watchdog {
 public:
  // A step armed for longer than `limit_seconds` ends the process, naming `rank` and the step.
  Watchdog(int rank, double limit_seconds);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(std::string what);
  void disarm();

 private:
  using Clock = std::chrono::steady_clock;
  void loop();

  int rank_;
  Clock::duration limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool armed_ = false;
  std::string what_;
  Clock::time_point deadline_{};
  std::thread thread_;  // last: started once the members it reads exist
};

// Watches one blocking step for as long as it lives.
class Watched {
 public:
  Watched(Watchdog& dog, std::string what) : dog_(dog) { dog_.arm(std::move(what)); }
  ~Watched() { dog_.disarm(); }
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;

 private:
  Watchdog& dog_;
};

}  // namespace shardplan::collector
