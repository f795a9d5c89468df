#pragma once
// `collect-costs comm --spawn`: runs the W ranks of a collection as child processes on this host, with
// the environment a launcher such as torchrun would give them. Plain POSIX, no LibTorch.
#include <string>
#include <vector>

namespace shardplan {

// Environment variable naming the user's command line, so ranks record it rather than their own.
inline constexpr const char* kLaunchCommandVariable = "SHARDPLAN_LAUNCH_COMMAND";

struct SpawnConfig {
  std::string executable;         // what each rank runs (this program)
  std::vector<std::string> args;  // each rank's arguments, without the program name
  int world_size = 0;
  std::string launch_command;       // passed to the ranks in kLaunchCommandVariable
  double stop_grace_seconds = 5.0;  // after a rank fails: SIGTERM the others, SIGKILL them after this
};

// Starts rank r = 0..W-1 with RANK=r, LOCAL_RANK=r, WORLD_SIZE=W, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT, each in its own process group (so a terminal's Ctrl-C reaches them once, forwarded by this
// process) and with SIGTERM as its parent-death signal. Forwards SIGINT and SIGTERM to the ranks. Returns
// 0 when every rank exits 0; otherwise stops the rest and returns the first failing rank's exit status
// (1 when it was killed by a signal).
int spawn_local_ranks(const SpawnConfig& config);

// A TCP port on `address` that was free a moment ago (the kernel's pick for port 0).
int find_free_port(const std::string& address);

// This program's path (/proc/self/exe resolved).
std::string current_executable();

}  // namespace shardplan
