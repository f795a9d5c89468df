#pragma once
// The CommTimer (costs/measure.hpp) of this host: times plans' collectives across ranks of this host with
// the all-to-all collector's protocol, so that the measurement is the quantity the comm model was trained
// on. Each plan is one given workload (its devices' output widths, and their compute skew as start delays);
// one run of this program's `collect-costs comm --spawn --workloads` per world size times them all. No
// LibTorch types here (the ranks run it).
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

}  // namespace shardplan
