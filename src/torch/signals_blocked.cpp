#include "signals_blocked.hpp"

#include <pthread.h>

namespace shardplan::collector {

SignalsBlocked::SignalsBlocked() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &saved_);
}

SignalsBlocked::~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

}  // namespace shardplan::collector
