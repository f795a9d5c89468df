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

#if SHARDPLAN_WITH_TORCH
namespace {

LocalCommTimerConfig timer_config(const CommMeasureFlags& flags, bool quiet, const std::string& launch_command) {
  LocalCommTimerConfig config;
  config.repeats = flags.repeats;
  config.rounds = flags.rounds;
  config.max_ranks = flags.max_ranks;
  config.quiet = quiet;
  config.launch_command = launch_command;
  return config;
}

// The --measure-comm- flag of a timer setting (validate_local_comm_timer's names).
std::string comm_flag(const std::string& setting) {
  if (setting == "batch size") return "--measure-comm-batch-size";
  if (setting == "maximum ranks") return "--measure-comm-max-ranks";
  return "--measure-comm-" + setting;  // repeats, rounds
}

}  // namespace
#else
namespace {

using TimedComm = std::optional<MeasuredComm>;  // a plan's timing, or none

std::vector<TimedComm> no_timer(const std::vector<CommToMeasure>& /*plans*/, int64_t /*batch*/) {
  throw InputError("--measure-comm: this shard-plan was built without LibTorch, which timing the all-to-alls needs");
}

}  // namespace
#endif

void check_comm_measure_options(const CommMeasureFlags& flags, bool measuring) {
  if (flags.enabled && !measuring)
    throw InputError("--measure-comm: needs --measure (its delays are measured compute)");
#if SHARDPLAN_WITH_TORCH
  try {
    validate_local_comm_timer(timer_config(flags, false, ""), flags.batch_size);
  } catch (const SettingError& e) {
    throw InputError(fmt::format("{}: {}", comm_flag(e.setting()), e.rule()));
  }
#endif
}

CommTimer comm_timer_on_this_host(const CommMeasureFlags& flags, bool quiet, const std::string& launch_command) {
#if SHARDPLAN_WITH_TORCH
  return local_comm_timer(timer_config(flags, quiet, launch_command));
#else
  (void)flags, (void)quiet, (void)launch_command;
  return no_timer;
#endif
}

}  // namespace shardplan::cli
