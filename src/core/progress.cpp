#include "shardplan/core/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace shardplan {

namespace {

// Plain-line mode prints at most this often, so CI logs stay short.
constexpr double kLineIntervalSeconds = 10.0;
constexpr double kRedrawIntervalSeconds = 0.2;
constexpr int kBarWidth = 30;

}  // namespace

std::string format_duration(double seconds) {
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Progress(std::string what, int64_t total, int64_t done, bool quiet)
    : what_(std::move(what)),
      total_(total),
      start_done_(done),
      done_(done),
      quiet_(quiet),
      terminal_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done, const std::string& note) {
  done_ = done;
  note_ = note;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_print_).count();
  if (since >= (terminal_ ? kRedrawIntervalSeconds : kLineIntervalSeconds)) {
    last_print_ = now;
    print(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  print(true);
}

void Progress::print(bool final) {
  if (quiet_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int64_t new_work = done_ - start_done_;
  std::string eta = "?";
  if (new_work > 0 && total_ > done_)
    eta = format_duration(elapsed / static_cast<double>(new_work) * static_cast<double>(total_ - done_));
  if (total_ <= done_) eta = "0s";
  double fraction = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  std::string tail = note_.empty() ? "" : "  " + note_;
  if (terminal_) {
    int filled = static_cast<int>(fraction * kBarWidth);
    std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                      std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
    fmt::print(stderr, "\r[{}] {}/{} {}  {} elapsed, ETA {}{}\x1b[K{}", bar, done_, total_, what_,
               format_duration(elapsed), eta, tail, final ? "\n" : "");
  } else {
    fmt::print(stderr, "progress: {}/{} {} ({:.0f}%), {} elapsed, ETA {}{}\n", done_, total_, what_, 100 * fraction,
               format_duration(elapsed), eta, tail);
  }
  std::fflush(stderr);
}

}  // namespace shardplan
