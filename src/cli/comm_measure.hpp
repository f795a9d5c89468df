#pragma once
// --measure-comm (bench, evaluate): the flags of timing measured plans' all-to-alls across ranks on this
// host, with the torch layer's local_comm_timer (the collector's protocol).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "shardplan/costs/measure.hpp"

namespace shardplan::cli {

struct CommMeasureFlags {
  bool enabled = false;
  int64_t batch_size = 2048;  // global batch: the bundled comm data's
  int repeats = 15;           // as LocalCommTimerConfig's
  int rounds = 3;
  int max_ranks = 16;
};

void add_comm_measure_options(CLI::App& app, CommMeasureFlags& flags);
// Throws InputError naming the flag; --measure-comm needs --measure (the delays are measured compute). The
// values are the timer's to check (validate_local_comm_timer), in a build with LibTorch.
void check_comm_measure_options(const CommMeasureFlags& flags, bool measuring);
// The timer the flags ask for (time it at flags.batch_size); the ranks record `launch_command`. In a build
// without LibTorch, one that throws InputError.
CommTimer comm_timer_on_this_host(const CommMeasureFlags& flags, bool quiet, const std::string& launch_command);

}  // namespace shardplan::cli
