#include "shardplan/core/subprocess.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "shardplan/core/errors.hpp"

extern char** environ;

namespace shardplan {

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || x.rfind(name, 0) == 0;
    if (!replaced) merged.push_back(entry);
  }
  merged.insert(merged.end(), extra.begin(), extra.end());
  return merged;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Waits for `pid` up to `seconds` (its exit status into `status`); returns whether it exited.
bool wait_for_exit(int pid, double seconds, int* status = nullptr) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int ignored = 0;
  do {
    const int done = ::waitpid(pid, status != nullptr ? status : &ignored, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return true;
    ::usleep(10'000);
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

}  // namespace

std::string tail_of(const std::string& text, std::size_t max_chars) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  return trimmed.size() <= max_chars ? trimmed : "..." + trimmed.substr(trimmed.size() - max_chars);
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                          std::optional<double> timeout_seconds) {
  if (argv.empty()) throw RuntimeFailure("run_process: no program to run");
  TemporaryDirectory streams("shard-plan-process");
  const std::string out_path = streams.path() + "/stdout";
  const std::string err_path = streams.path() + "/stderr";
  // Files rather than pipes: nothing to drain while waiting, whatever the program writes.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // A group of its own, so that a timeout stops what it started as well (Python's workers).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(environment);
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<char*> env_pointers = pointers(env);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attributes, arg_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) throw RuntimeFailure(fmt::format("{}: cannot start: {}", argv[0], std::strerror(spawned)));
  ProcessResult result;
  int status = 0;
  if (timeout_seconds && !wait_for_exit(pid, *timeout_seconds, &status)) {
    ::kill(-pid, SIGKILL);
    wait_for_exit(pid, 10.0, &status);
    result.timed_out = true;
  } else if (!timeout_seconds) {
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR)
        throw RuntimeFailure(fmt::format("{}: cannot wait for it: {}", argv[0], std::strerror(errno)));
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_whole(out_path);
  result.errors = read_whole(err_path);
  return result;
}

LineProcess::LineProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment)
    : program_(argv.empty() ? "" : argv.front()) {
  if (argv.empty()) throw RuntimeFailure("LineProcess: no program to run");
  // A worker that exits closes its end of the pipe: writing then fails with EPIPE, which fail() reports,
  // instead of SIGPIPE ending this process. Set once, for the process: nothing here wants SIGPIPE's default.
  static const bool ignoring_sigpipe = (std::signal(SIGPIPE, SIG_IGN), true);
  (void)ignoring_sigpipe;
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    throw RuntimeFailure(fmt::format("{}: cannot make a pipe: {}", program_, std::strerror(errno)));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(in[0]);
    ::close(in[1]);
    throw RuntimeFailure(fmt::format("{}: cannot make a pipe: {}", program_, std::strerror(error)));
  }
  to_child_ = in[1];
  from_child_ = out[0];
  stderr_path_ = streams_.path() + "/stderr";
  const int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (err < 0) {
    const int error = errno;
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    to_child_ = from_child_ = -1;
    throw RuntimeFailure(fmt::format("{}: cannot make a file for its stderr: {}", program_, std::strerror(error)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(environment);
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<char*> env_pointers = pointers(env);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, program_.c_str(), &actions, nullptr, arg_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err);
  if (spawned != 0) {
    ::close(to_child_);
    ::close(from_child_);
    to_child_ = from_child_ = -1;
    throw RuntimeFailure(fmt::format("{}: cannot start: {}", program_, std::strerror(spawned)));
  }
  pid_ = pid;
}

LineProcess::~LineProcess() {
  if (to_child_ >= 0) ::close(to_child_);  // end of input: a worker's cue to exit
  if (from_child_ >= 0) ::close(from_child_);
  if (pid_ > 0 && !wait_for_exit(pid_, 5.0)) {
    ::kill(pid_, SIGKILL);
    wait_for_exit(pid_, 5.0);
  }
}

void LineProcess::fail(const std::string& what) {
  std::ifstream in(stderr_path_);
  std::ostringstream said;
  said << in.rdbuf();
  throw RuntimeFailure(fmt::format("{}: {}{}", program_, what, said.str().empty() ? "" : ": " + tail_of(said.str())));
}

std::string LineProcess::ask(const std::string& line, double timeout_seconds) {
  std::string message = line + "\n";
  for (std::size_t sent = 0; sent < message.size();) {
    const ssize_t n = ::write(to_child_, message.data() + sent, message.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("stopped taking requests");
    sent += static_cast<std::size_t>(n);
  }
  return read_line(timeout_seconds);
}

std::string LineProcess::read_line(double timeout_seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    if (const auto end = pending_.find('\n'); end != std::string::npos) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) fail(fmt::format("said nothing within {} s", timeout_seconds));
    pollfd ready{from_child_, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (polled < 0 && errno != EINTR) fail(fmt::format("cannot wait for it: {}", std::strerror(errno)));
    if (polled <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(from_child_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("exited");
    pending_.append(buffer, static_cast<std::size_t>(n));
  }
}

TemporaryDirectory::TemporaryDirectory(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/{}.XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", prefix);
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw RuntimeFailure(fmt::format("{}: cannot make a temporary directory: {}", pattern, std::strerror(errno)));
  }
  path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace shardplan
