#include "shardplan/core/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>

#include "shardplan/core/temp_file.hpp"

namespace shardplan {

namespace {

std::atomic<int> g_signals{0};

extern "C" void on_interrupt(int signal_number) {
  if (g_signals.fetch_add(1) >= 1) {
    remove_temp_files_now();  // _exit skips every destructor
    ::_exit(128 + signal_number);
  }
  const char message[] = "\nshard-plan: interrupted; finishing the current sample (again to abort)\n";
  [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, message, sizeof(message) - 1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool interrupt_requested() { return g_signals.load() > 0; }

}  // namespace shardplan
