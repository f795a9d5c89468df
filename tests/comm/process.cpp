#include "process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace shardplan::commtest {

const std::vector<std::string> kLauncherVariables = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE", "SHARDPLAN_LAUNCH_COMMAND"};

namespace {

std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "shardplan-comm-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::vector<std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string item(*entry);
    std::string name = item.substr(0, item.find('='));
    bool drop = overrides.count(name) > 0;
    for (const auto& launcher : kLauncherVariables) drop = drop || name == launcher;
    if (!drop) env.push_back(item);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

Process::Process(const std::vector<std::string>& args, const std::map<std::string, std::string>& env)
    : capture_dir_(make_temp_dir()) {
  std::string binary = SHARDPLAN_BINARY;
  std::vector<std::string> argv_strings{binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = child_environment(env);
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string out_path = (capture_dir_ / "stdout").string();
  std::string err_path = (capture_dir_ / "stderr").string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    if (!std::freopen(out_path.c_str(), "w", stdout) || !std::freopen(err_path.c_str(), "w", stderr) ||
        !std::freopen("/dev/null", "r", stdin)) {
      std::_Exit(127);
    }
    ::execve(binary.c_str(), argv.data(), envp.data());
    std::_Exit(127);
  }
}

Process::~Process() {
  if (!exit_code_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(capture_dir_, ec);
}

void Process::signal(int signal_number) const { ::kill(pid_, signal_number); }

std::optional<int> Process::wait_for(std::chrono::duration<double> limit) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit);
  while (!exit_code_) {
    int status = 0;
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

std::string Process::err() const { return read_text((capture_dir_ / "stderr").string()); }
std::string Process::out() const { return read_text((capture_dir_ / "stdout").string()); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace shardplan::commtest
