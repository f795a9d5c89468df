#pragma once
// bench --measure-comm: times the all-to-alls of measured plans across ranks on this host. Each plan is
// one given workload (its devices' output widths, and their measured compute skew as start delays), and
// one `collect-costs comm --spawn --workloads` run per world size times them all, with the collector's
// protocol, so the measurement is the quantity the comm model was trained on.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "shardplan/bench/bench.hpp"

namespace shardplan::cli {

struct CommMeasureFlags {
  bool enabled = false;
  int64_t batch_size = 2048;  // global batch: the bundled comm data's
  int repeats = 15;           // timed runs per plan, median per rank: the bundled comm data's
  // Every plan is timed this many times, in interleaved rounds (each a pass over all plans), and each
  // rank keeps its fastest: a busy stretch of the host then costs every plan one round, not one plan all.
  int rounds = 3;
  int max_ranks = 16;  // larger plans would start more processes than a host should run
  double timeout_s = 120.0;
};

void add_comm_measure_options(CLI::App& app, CommMeasureFlags& flags);
// Throws InputError naming the flag; --measure-comm needs --measure (the delays are measured compute).
void check_comm_measure_options(const CommMeasureFlags& flags, bool measuring);
// One result per plan; nullopt for plans not timed (too many ranks, a batch that does not divide, a
// failed or interrupted run: each is logged).
std::vector<std::optional<MeasuredComm>> measure_comm_on_this_host(const CommMeasureFlags& flags,
                                                                   const std::vector<CommToMeasure>& plans, bool quiet);

}  // namespace shardplan::cli
