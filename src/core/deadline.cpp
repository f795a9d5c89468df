#include "shardplan/core/deadline.hpp"

#include <algorithm>

namespace shardplan {

Deadline Deadline::after(double seconds, Clock::time_point start) {
  if (!(seconds > 0.0)) return Deadline();
  // A limit of centuries must not overflow the clock's 64-bit nanoseconds: 30 years is as good as never.
  constexpr double kLongest = 1e9;
  const double bounded = std::min(seconds, kLongest);
  return Deadline(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bounded)));
}

std::optional<double> Deadline::seconds_left() const {
  if (!at_) return std::nullopt;
  return std::max(0.0, std::chrono::duration<double>(*at_ - now_()).count());
}

}  // namespace shardplan
