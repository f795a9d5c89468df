#include "watchdog.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "shardplan/core/errors.hpp"

namespace shardplan::collector {

Watchdog::Watchdog(int rank, double limit_seconds)
    : rank_(rank),
      limit_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_seconds))),
      thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  what_ = std::move(what);
  deadline_ = Clock::now() + limit_;
  armed_ = true;
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    if (armed_ && Clock::now() > deadline_) {
      fmt::print(stderr,
                 "shard-plan: error: rank {}: {} made no progress for {:.0f} s (a peer died, hung or never "
                 "arrived); aborting\n",
                 rank_, what_, std::chrono::duration<double>(limit_).count());
      std::fflush(stderr);
      std::_Exit(static_cast<int>(ExitCode::kRuntimeFailure));
    }
  }
}

}  // namespace shardplan::collector
