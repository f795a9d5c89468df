#include "shardplan/core/temp_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

// The table a signal handler reads: it may neither allocate nor lock, so paths live in fixed slots. A
// run holds a few temporaries at once (a plan and its chart, a model's three files).
constexpr int kSlots = 64;
constexpr std::size_t kMaxPath = 4096;
constexpr int kFree = 0;
constexpr int kFilling = 1;
constexpr int kHeld = 2;

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxPath] = {};
};
Slot g_slots[kSlots];

// The signals whose default action ends the process and that a user or a shell sends (or a full disk
// or a closed pipe raises) while a run writes its outputs.
constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};

extern "C" void remove_temp_files_and_reraise(int signal_number) {
  remove_temp_files_now();
  // SA_RESETHAND restored the default action: the signal, delivered again once this returns, ends the
  // process as it would have.
  ::raise(signal_number);
}

// Once per process, for each signal still at its default action (a handler someone installed, such as
// interrupt.cpp's, is left alone and removes the files itself).
void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal_number : kFatalSignals) {
      struct sigaction current {};
      if (::sigaction(signal_number, nullptr, &current) != 0) continue;
      if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = remove_temp_files_and_reraise;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      ::sigaction(signal_number, &action, nullptr);
    }
  });
}

int claim_slot(const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kFilling)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kHeld);
      return i;
    }
  }
  return -1;
}

void release_slot(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree);
}

// The fatal signals held back for a scope, so that no file is created without being registered.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal_number : kFatalSignals) sigaddset(&set, signal_number);
    ::pthread_sigmask(SIG_BLOCK, &set, &before_);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_{};
};

// Twelve characters of [a-z0-9] from the OS's entropy: names no other run picks.
std::string random_suffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  static std::random_device device;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string suffix(12, 'x');
  for (char& c : suffix) c = kAlphabet[device() % (sizeof(kAlphabet) - 1)];
  return suffix;
}

}  // namespace

void remove_temp_files_now() noexcept {
  for (Slot& slot : g_slots) {
    if (slot.state.load() == kHeld) ::unlink(slot.path);
  }
}

TempFile::TempFile(const std::filesystem::path& dir, const std::string& name, const std::string& target)
    : target_(target) {
  install_handlers();
  // The name is registered before the file exists: held-back signals are this thread's only, and a signal
  // another thread (LibTorch's pool) takes between creating and registering would leave the file behind.
  // Removing a registered name not yet created is harmless; O_EXCL never opens another's file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path = (dir / ("." + name + ".tmp." + random_suffix())).string();
    SignalsHeld held;
    slot_ = claim_slot(path);
    if (slot_ < 0) {
      throw RuntimeFailure(
          fmt::format("{}: cannot track a temporary file for removal on a signal (more than {} at once, "
                      "or a path of {} bytes or more)",
                      target, kSlots, kMaxPath));
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
      path_ = path;
      break;
    }
    const int error = errno;
    release_slot(slot_);
    slot_ = -1;
    if (error != EEXIST) {
      throw RuntimeFailure(
          fmt::format("{}: cannot create a temporary file in {}: {}", target, dir.string(), std::strerror(error)));
    }
  }
  if (fd_ < 0)
    throw RuntimeFailure(
        fmt::format("{}: cannot create a temporary file in {}: every name taken", target, dir.string()));
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
  release_slot(slot_);
}

void TempFile::close() {
  if (fd_ < 0) return;
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw RuntimeFailure(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
}

void TempFile::rename_to(const std::string& to) {
  if (std::rename(path_.c_str(), to.c_str()) != 0) {
    throw RuntimeFailure(fmt::format("{}: cannot rename into place: {}", target_, std::strerror(errno)));
  }
  path_.clear();
  release_slot(slot_);
  slot_ = -1;
}

}  // namespace shardplan
