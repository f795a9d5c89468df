#pragma once
// Threads inherit the creating thread's signal mask. Blocking SIGINT and SIGTERM while the watchdog, the
// TCP store and Gloo start their threads sends those signals to the main thread only, where the handler
// just sets the interrupt flag, instead of interrupting a socket call inside Gloo. Plain POSIX.
#include <signal.h>

namespace shardplan::collector {

// Blocks SIGINT and SIGTERM in this thread (and the threads it starts) for as long as it lives.
class SignalsBlocked {
 public:
  SignalsBlocked();
  ~SignalsBlocked();
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t saved_{};
};

}  // namespace shardplan::collector
