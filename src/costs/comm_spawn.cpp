#include "shardplan/costs/comm_spawn.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "shardplan/core/errors.hpp"

extern char** environ;

namespace shardplan {

namespace {

constexpr const char* kLoopback = "127.0.0.1";
// Launcher variables this process replaces, so an outer launcher's values never leak into the ranks.
constexpr const char* kReplacedVariables[] = {"RANK=",
                                              "LOCAL_RANK=",
                                              "WORLD_SIZE=",
                                              "LOCAL_WORLD_SIZE=",
                                              "MASTER_ADDR=",
                                              "MASTER_PORT=",
                                              "SHARDPLAN_LAUNCH_COMMAND="};

std::atomic<int> g_forward_count{0};
std::atomic<int> g_last_signal{0};

extern "C" void remember_signal(int signal_number) {
  g_last_signal.store(signal_number);
  g_forward_count.fetch_add(1);
}

// Restores the previous SIGINT and SIGTERM handlers when the spawner returns.
class ForwardSignals {
 public:
  ForwardSignals() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~ForwardSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::vector<std::string> rank_environment(int rank, int world_size, int port, const std::string& launch_command) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    bool replaced = false;
    for (const char* prefix : kReplacedVariables)
      replaced = replaced || std::strncmp(*entry, prefix, std::strlen(prefix)) == 0;
    if (!replaced) env.emplace_back(*entry);
  }
  env.push_back(fmt::format("RANK={}", rank));
  env.push_back(fmt::format("LOCAL_RANK={}", rank));
  env.push_back(fmt::format("WORLD_SIZE={}", world_size));
  env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", world_size));
  env.push_back(fmt::format("MASTER_ADDR={}", kLoopback));
  env.push_back(fmt::format("MASTER_PORT={}", port));
  env.push_back(fmt::format("{}={}", kLaunchCommandVariable, launch_command));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

// The ranks' argument and environment arrays, built before fork: between fork and exec only
// async-signal-safe calls. Not movable: the arrays point into the strings.
class RankCommands {
 public:
  RankCommands(const SpawnConfig& config, int port) : argv_strings_{config.executable} {
    argv_strings_.insert(argv_strings_.end(), config.args.begin(), config.args.end());
    argv_ = pointers(argv_strings_);
    for (int rank = 0; rank < config.world_size; ++rank) {
      env_strings_.push_back(rank_environment(rank, config.world_size, port, config.launch_command));
    }
    for (auto& env : env_strings_) envs_.push_back(pointers(env));
  }
  RankCommands(const RankCommands&) = delete;
  RankCommands& operator=(const RankCommands&) = delete;

  char** argv() { return argv_.data(); }
  char** environment(int rank) { return envs_[static_cast<std::size_t>(rank)].data(); }

 private:
  std::vector<std::string> argv_strings_;
  std::vector<char*> argv_;
  std::vector<std::vector<std::string>> env_strings_;
  std::vector<std::vector<char*>> envs_;
};

// The ranks as child processes: started one by one, each in its own process group and ended with its
// parent; watched until every one has ended, the others stopped when one fails.
class RankProcesses {
 public:
  explicit RankProcesses(double stop_grace_seconds)
      : stop_grace_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(stop_grace_seconds))) {}

  void start(const SpawnConfig& config, RankCommands& commands) {
    const pid_t parent = ::getpid();
    for (int rank = 0; rank < config.world_size; ++rank) {
      pid_t pid = ::fork();
      if (pid < 0) {
        int error = errno;
        stop_all(SIGKILL);
        for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
        throw RuntimeFailure(fmt::format("cannot start rank {}: fork failed: {}", rank, std::strerror(error)));
      }
      if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
        ::execve(config.executable.c_str(), commands.argv(), commands.environment(rank));
        const char message[] = "shard-plan: error: cannot execute this program for a rank\n";
        [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, message, sizeof(message) - 1);
        ::_exit(127);
      }
      pids_.push_back(pid);
      running_.push_back(true);
    }
    alive_ = config.world_size;
  }

  // Waits for every rank, forwarding the signals this process gets; returns the first failing rank's exit
  // status (0 when none failed).
  int wait() {
    int seen_signals = 0;
    while (alive_ > 0) {
      int signals = g_forward_count.load();
      if (signals != seen_signals) {
        seen_signals = signals;
        stop_all(g_last_signal.load());
      }
      for (std::size_t r = 0; r < pids_.size(); ++r) reap(r);
      if (kill_pending_ && std::chrono::steady_clock::now() >= kill_at_) {
        stop_all(SIGKILL);
        kill_pending_ = false;
      }
      if (alive_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return failure_;
  }

 private:
  void stop_all(int signal_number) {
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      if (running_[r]) ::kill(pids_[r], signal_number);
    }
  }

  // Rank r, if it has ended; the first to fail stops the others (SIGTERM, then SIGKILL after the grace).
  void reap(std::size_t r) {
    if (!running_[r]) return;
    int status = 0;
    pid_t done = ::waitpid(pids_[r], &status, WNOHANG);
    if (done == 0 || (done < 0 && errno == EINTR)) return;
    running_[r] = false;
    --alive_;
    bool ok = done > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || failure_ != 0) return;
    // Bad usage or input (2) stays 2, so scripts can tell it from a failed measurement (1).
    failure_ = done > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
    spdlog::error("rank {} {}; stopping the other ranks", r, done > 0 ? describe_status(status) : "was lost");
    stop_all(SIGTERM);
    kill_pending_ = true;
    kill_at_ = std::chrono::steady_clock::now() + stop_grace_;
  }

  std::chrono::steady_clock::duration stop_grace_;
  std::vector<pid_t> pids_;
  std::vector<bool> running_;
  int alive_ = 0;
  int failure_ = 0;  // exit status to return: the first failing rank's
  bool kill_pending_ = false;
  std::chrono::steady_clock::time_point kill_at_{};
};

}  // namespace

int find_free_port(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw RuntimeFailure(fmt::format("cannot open a socket to find a free port: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    throw RuntimeFailure(fmt::format("'{}' is not an IPv4 address", address));
  }
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    int error = errno;
    ::close(fd);
    throw RuntimeFailure(fmt::format("cannot find a free port on {}: {}", address, std::strerror(error)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string current_executable() {
  std::vector<char> buffer(4096);
  ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) throw RuntimeFailure(fmt::format("cannot resolve /proc/self/exe: {}", std::strerror(errno)));
  return std::string(buffer.data(), static_cast<std::size_t>(n));
}

int spawn_local_ranks(const SpawnConfig& config) {
  // The rank 0 process binds this port for the TCP store a moment later; another process taking it in
  // between makes rank 0 fail to bind, a clear error and a rare one.
  const int port = find_free_port(kLoopback);
  spdlog::info("spawning {} ranks (store at {}:{})", config.world_size, kLoopback, port);
  RankCommands commands(config, port);
  g_forward_count.store(0);
  ForwardSignals forward;
  RankProcesses ranks(config.stop_grace_seconds);
  ranks.start(config, commands);
  return ranks.wait();
}

}  // namespace shardplan
