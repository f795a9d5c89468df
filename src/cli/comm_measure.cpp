#include "comm_measure.hpp"

#include <fmt/format.h>

#include "shardplan/core/errors.hpp"

#if SHARDPLAN_WITH_TORCH
#include "shardplan/torch/local_comm_timer.hpp"
#endif

namespace shardplan::cli {

void add_comm_measure_options(CLI::App& app, CommMeasureFlags& flags) {
  app.add_flag("--measure-comm", flags.enabled,
               "With --measure, also time each measured plan's collectives across ranks on this host (one "
               "process per GPU) and compare the whole step");
  app.add_option("--measure-comm-batch-size", flags.batch_size, "Global batch of the timed collectives")
      ->capture_default_str();
  app.add_option("--measure-comm-repeats", flags.repeats, "Timed runs of each plan's collectives (median per rank)")
      ->capture_default_str();
  app.add_option("--measure-comm-rounds", flags.rounds,
                 "Interleaved passes over all plans' collectives; each rank keeps its fastest")
      ->capture_default_str();
  app.add_option("--measure-comm-max-ranks", flags.max_ranks, "Plans on more GPUs than this are not timed")
      ->capture_default_str();
}

void check_comm_measure_options(const CommMeasureFlags& flags, bool measuring) {
  if (flags.enabled && !measuring)
    throw InputError("--measure-comm: needs --measure (its delays are measured compute)");
  if (flags.batch_size < 1 || flags.batch_size > (1 << 24)) {
    throw InputError(fmt::format("--measure-comm-batch-size: must be in [1, 16777216], got {}", flags.batch_size));
  }
  if (flags.repeats < 1 || flags.repeats > 1000) {
    throw InputError(fmt::format("--measure-comm-repeats: must be in [1, 1000], got {}", flags.repeats));
  }
  if (flags.rounds < 1 || flags.rounds > 1000) {
    throw InputError(fmt::format("--measure-comm-rounds: must be in [1, 1000], got {}", flags.rounds));
  }
  if (flags.max_ranks < 2 || flags.max_ranks > 4096) {
    throw InputError(fmt::format("--measure-comm-max-ranks: must be in [2, 4096], got {}", flags.max_ranks));
  }
}

CommTimer comm_timer_on_this_host(const CommMeasureFlags& flags, bool quiet, const std::string& launch_command) {
#if SHARDPLAN_WITH_TORCH
  LocalCommTimerConfig config;
  config.repeats = flags.repeats;
  config.rounds = flags.rounds;
  config.max_ranks = flags.max_ranks;
  config.quiet = quiet;
  config.launch_command = launch_command;
  return local_comm_timer(config);
#else
  (void)flags, (void)quiet, (void)launch_command;
  return [](const std::vector<CommToMeasure>&, int64_t) -> std::vector<std::optional<MeasuredComm> > {
    throw InputError("--measure-comm: this shard-plan was built without LibTorch, which timing the all-to-alls needs");
  };
#endif
}

}  // namespace shardplan::cli
