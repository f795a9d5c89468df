#pragma once
// The CommTimer (costs/measure.hpp) of this host: times plans' collectives across ranks of this host with
// the all-to-all collector's protocol, so that the measurement is the quantity the comm model was trained
// on. Each plan is one given workload (its devices' output widths, and their compute skew as start delays);
// one run of this program's `collect-costs comm --spawn --workloads` per world size times them all. No
// LibTorch types here (the ranks run it).
#include <cstdint>
#include <functional>
#include <string>

#include "shardplan/costs/measure.hpp"

namespace shardplan {

struct LocalCommTimerConfig {
  int repeats = 15;  // timed runs per plan, median per rank: the bundled comm data's
  // Every plan is timed this many times, in interleaved rounds (each a pass over all plans), and each rank
  // keeps its fastest: a busy stretch of the host then costs every plan one round, not one plan all.
  int rounds = 3;
  int max_ranks = 16;  // plans on more devices would start more processes than a host should run: not timed
  double timeout_s = 120.0;
  bool quiet = false;
  std::string launch_command;  // the user's command, which the ranks record
};

// The timer's settings, with the global batch it will time at: the collector's (validate_comm_timing), and
// rounds and max_ranks. Throws SettingError ("repeats", "timeout", "batch size", "rounds", "maximum ranks").
void validate_local_comm_timer(const LocalCommTimerConfig& config, int64_t batch_size);

// One result per plan; nullopt for plans not timed (too many ranks, a batch that does not divide, a failed
// or interrupted run: each is logged).
CommTimer local_comm_timer(const LocalCommTimerConfig& config);

// One collection of given workloads on every rank of a world: what `collect-costs comm --workloads` runs.
struct CommRanksRun {
  std::string workloads_path;  // a shard-plan-comm-workloads/1 file on this host
  std::string out_dir;         // rank 0 writes the timed samples here (cost-data, kind comm)
  int world_size = 0;
  int devices_per_host = 0;  // 0: one host
  int64_t batch_size = 0;
  int repeats = 15;
  double timeout_s = 120.0;
  bool quiet = false;
  std::string launch_command;
};

// Runs every rank of a collection to its end; 0 when all succeeded, else a failing rank's exit status.
using CommRanksRunner = std::function<int(const CommRanksRun&)>;

// The same timer with other ranks than this host's spawned processes (a launched job's, say).
CommTimer comm_timer_with(const LocalCommTimerConfig& config, CommRanksRunner runner);

}  // namespace shardplan
