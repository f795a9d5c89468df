#pragma once
// When a search must stop (--time-limit). Searches poll it between pieces of work whose cost is bounded,
// so a search returns soon after it passes; polling only reads the clock, and changes nothing while no
// limit is set or the limit is not reached, so plans stay deterministic then.
#include <chrono>
#include <functional>
#include <optional>

namespace shardplan {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  Deadline() = default;  // none: never passes
  // Passes at `at` as `now` tells the time (tests give a clock of their own).
  explicit Deadline(Clock::time_point at, Now now = Clock::now) : at_(at), now_(std::move(now)) {}
  // `seconds` after `start`; none for 0.
  static Deadline after(double seconds, Clock::time_point start);

  bool set() const { return at_.has_value(); }
  bool passed() const { return at_ && now_() >= *at_; }
  // Seconds until it passes (0 once it has); none when no deadline is set.
  std::optional<double> seconds_left() const;
  // The earlier of two deadlines (either may be unset).
  static Deadline earlier(const Deadline& a, const Deadline& b) {
    return !b.set() || (a.set() && *a.at_ <= *b.at_) ? a : b;
  }

 private:
  std::optional<Clock::time_point> at_;
  Now now_ = Clock::now;
};

}  // namespace shardplan
