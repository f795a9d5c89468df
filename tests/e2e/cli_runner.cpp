#include "cli_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardplan::e2e {

int start_cli(const std::vector<std::string>& args, const TempDir& capture) {
  const std::string out_path = capture.path("stdout");
  const std::string err_path = capture.path("stderr");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!std::freopen(out_path.c_str(), "w", stdout) || !std::freopen(err_path.c_str(), "w", stderr)) std::_Exit(127);
    if (!std::freopen("/dev/null", "r", stdin)) std::_Exit(127);
    std::vector<char*> argv;
    std::string binary = SHARDPLAN_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (auto& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    std::_Exit(127);
  }
  return pid;
}

CliResult finish_cli(int pid, const TempDir& capture) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(capture.path("stdout"));
  result.err = read_file(capture.path("stderr"));
  return result;
}

CliResult run_cli(const std::vector<std::string>& args) {
  TempDir capture;
  return finish_cli(start_cli(args, capture), capture);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string source_path(const std::string& relative) { return std::string(SHARDPLAN_SOURCE_DIR) + "/" + relative; }

}  // namespace shardplan::e2e
