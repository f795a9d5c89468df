#include "shardplan/core/process_clock.hpp"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace shardplan {

namespace {

// Seconds since boot at which this process started: field 22 of /proc/self/stat, in clock ticks. The
// command name (field 2) may hold spaces and parentheses, so the fields are counted after its last ')'.
bool started_since_boot(double& seconds) {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return false;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return false;
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return false;
  try {
    seconds = static_cast<double>(std::stoull(field)) / static_cast<double>(ticks);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::chrono::steady_clock::time_point find_start() {
  const auto now = std::chrono::steady_clock::now();
  double started = 0.0;
  timespec boot{};
  if (!started_since_boot(started) || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return now;
  const double elapsed = static_cast<double>(boot.tv_sec) + 1e-9 * static_cast<double>(boot.tv_nsec) - started;
  // Ticks are 10 ms: a start a hair in the future is rounding, and a long-lived process (a test runner)
  // is better served by the time of the first call.
  if (!(elapsed >= 0.0) || elapsed > 60.0) return now;
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(elapsed));
}

}  // namespace

std::chrono::steady_clock::time_point process_start_time() {
  static const auto start = find_start();
  return start;
}

}  // namespace shardplan
