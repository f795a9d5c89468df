#include "shardplan/torch/local_comm_timer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "scratch_dir.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/comm_spawn.hpp"
#include "shardplan/costs/comm_workload.hpp"
#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan {

namespace {

// Every rank runs on this host and holds the whole gradient: a plan whose replicas would need more than
// this in all is left untimed rather than failing the others' collection.
constexpr double kMaxHostAllreduceBytes = 8.0 * (1ull << 30);
constexpr double kGiB = 1ull << 30;
constexpr int kMaxRounds = 1000;
constexpr int kMaxRanks = 4096;

// The plans as given workloads, every plan once per round.
std::vector<CommWorkload> workloads_of(const std::vector<const CommToMeasure*>& plans, int rounds) {
  std::vector<CommWorkload> round;
  for (const CommToMeasure* plan : plans) {
    CommWorkload w;
    w.dim_sums = plan->dim_sums;
    w.rw_dim = plan->rw_dim;
    w.allreduce_floats = plan->allreduce_floats;
    w.host_rw_dims = plan->host_rw_dims;
    const double earliest = *std::min_element(plan->compute_ms.begin(), plan->compute_ms.end());
    for (double ms : plan->compute_ms) w.delays_ms.push_back(ms - earliest);
    round.push_back(std::move(w));
  }
  std::vector<CommWorkload> workloads;
  for (int r = 0; r < rounds; ++r) workloads.insert(workloads.end(), round.begin(), round.end());
  return workloads;
}

// Sample k is plan k % plans in round k / plans (an interrupted run leaves later ones out); each plan's
// rank keeps its fastest round.
std::vector<std::optional<MeasuredComm>> fastest_rounds(const std::optional<CostData>& timed, std::size_t plans) {
  std::vector<std::optional<MeasuredComm>> results(plans);
  const std::size_t done = timed ? timed->comm.size() : 0;
  for (std::size_t k = 0; k < done; ++k) {
    const CommSample& sample = timed->comm[k];
    std::optional<MeasuredComm>& result = results[k % plans];
    if (!result) {
      result = MeasuredComm{sample.fw_ms, sample.bw_ms, sample.allreduce_ms};
      continue;
    }
    for (std::size_t r = 0; r < sample.fw_ms.size(); ++r) {
      result->fw_ms[r] = std::min(result->fw_ms[r], sample.fw_ms[r]);
      result->bw_ms[r] = std::min(result->bw_ms[r], sample.bw_ms[r]);
      if (!result->allreduce_ms.empty())
        result->allreduce_ms[r] = std::min(result->allreduce_ms[r], sample.allreduce_ms[r]);
    }
  }
  return results;
}

// Every rank of `run` as a child process of this one, on this host.
int spawn_ranks(const CommRanksRun& run) {
  SpawnConfig spawn;
  spawn.executable = current_executable();
  spawn.world_size = run.world_size;
  spawn.args = {"collect-costs", "comm",
                "--workloads",   run.workloads_path,
                "--out",         run.out_dir,
                "--batch-size",  std::to_string(run.batch_size),
                "--repeats",     std::to_string(run.repeats),
                "--timeout",     fmt::format("{}", run.timeout_s)};
  if (run.devices_per_host > 0) {
    spawn.args.emplace_back("--gpus-per-host");
    spawn.args.push_back(std::to_string(run.devices_per_host));
  }
  if (run.quiet) spawn.args.emplace_back("--quiet");
  spawn.launch_command = run.launch_command;
  return spawn_local_ranks(spawn);
}

// Times `plans` (all of `world_size` devices) in one collection at the global batch; one result per
// plan. Plans with table-row-wise tables run their host's collectives in groups of `devices_per_host` ranks.
std::vector<std::optional<MeasuredComm>> time_world(const LocalCommTimerConfig& config, const CommRanksRunner& runner,
                                                    int64_t batch_size, int world_size, int devices_per_host,
                                                    const std::vector<const CommToMeasure*>& plans) {
  ScratchDir scratch;
  CommRanksRun run;
  run.workloads_path = scratch.path("workloads.json");
  run.out_dir = scratch.path("timed");
  run.world_size = world_size;
  run.devices_per_host = devices_per_host;
  run.batch_size = batch_size;
  run.repeats = config.repeats;
  run.timeout_s = config.timeout_s;
  run.quiet = config.quiet;
  run.launch_command = config.launch_command;
  write_comm_workloads(run.workloads_path, world_size, workloads_of(plans, config.rounds));
  spdlog::info("timing the collectives of {} plans on {} ranks, {} rounds", plans.size(), world_size, config.rounds);
  if (int status = runner(run); status != 0) {
    spdlog::warn("timing the collectives on {} ranks failed (exit {}); their steps are not measured", world_size,
                 status);
  }
  return fastest_rounds(find_cost_data(run.out_dir, CostKind::kComm), plans.size());
}

// The plans of one layout that can be timed here: those whose data-parallel gradients fit this host.
std::vector<std::size_t> timeable(const std::vector<CommToMeasure>& plans, const std::vector<std::size_t>& indices,
                                  int world_size) {
  std::vector<std::size_t> kept;
  for (std::size_t i : indices) {
    const double host_bytes = 4.0 * static_cast<double>(plans[i].allreduce_floats) * world_size;
    if (host_bytes > kMaxHostAllreduceBytes) {
      spdlog::warn(
          "timing the collectives: a plan on {} GPUs not timed: its data-parallel gradients need {:.1f} GiB on "
          "this host's {} ranks, over {:.0f} GiB",
          world_size, host_bytes / kGiB, world_size, kMaxHostAllreduceBytes / kGiB);
      continue;
    }
    kept.push_back(i);
  }
  return kept;
}

// Whether this host times plans on `world_size` devices at the global batch (logged when not).
bool times_world(const LocalCommTimerConfig& config, int64_t batch_size, int world_size, std::size_t plans) {
  if (world_size > config.max_ranks) {
    spdlog::warn("timing the collectives: {} plans on {} GPUs not timed: more than the {} ranks this host runs", plans,
                 world_size, config.max_ranks);
    return false;
  }
  if (batch_size % world_size != 0) {
    spdlog::warn("timing the collectives: {} plans on {} GPUs not timed: the global batch {} is not a multiple of {}",
                 plans, world_size, batch_size, world_size);
    return false;
  }
  return true;
}

std::vector<std::optional<MeasuredComm>> time_plans(const LocalCommTimerConfig& config, const CommRanksRunner& runner,
                                                    const std::vector<CommToMeasure>& plans, int64_t batch_size) {
  std::vector<std::optional<MeasuredComm>> results(plans.size());
  // One collection per world size and host size (0: no table-row-wise tables, no host groups needed).
  std::map<std::pair<int, int>, std::vector<std::size_t>> by_world_size;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    by_world_size[{static_cast<int>(plans[i].dim_sums.size()), plans[i].devices_per_host}].push_back(i);
  }
  for (const auto& [layout, indices] : by_world_size) {
    const auto [world_size, devices_per_host] = layout;
    if (world_size == 1) {  // one device: no all-to-all
      for (std::size_t i : indices) results[i] = MeasuredComm{{0.0}, {0.0}, {}};
      continue;
    }
    if (!times_world(config, batch_size, world_size, indices.size())) continue;
    const std::vector<std::size_t> timed_indices = timeable(plans, indices, world_size);
    if (timed_indices.empty()) continue;
    std::vector<const CommToMeasure*> group;
    for (std::size_t i : timed_indices) group.push_back(&plans[i]);
    std::vector<std::optional<MeasuredComm>> timed =
        time_world(config, runner, batch_size, world_size, devices_per_host, group);
    for (std::size_t k = 0; k < timed_indices.size(); ++k) results[timed_indices[k]] = std::move(timed[k]);
  }
  return results;
}

}  // namespace

void validate_local_comm_timer(const LocalCommTimerConfig& config, int64_t batch_size) {
  validate_comm_timing(config.repeats, config.timeout_s, batch_size);
  if (config.rounds < 1 || config.rounds > kMaxRounds) {
    throw SettingError("rounds", fmt::format("must be in [1, {}], got {}", kMaxRounds, config.rounds));
  }
  if (config.max_ranks < 2 || config.max_ranks > kMaxRanks) {
    throw SettingError("maximum ranks", fmt::format("must be in [2, {}], got {}", kMaxRanks, config.max_ranks));
  }
}

CommTimer local_comm_timer(const LocalCommTimerConfig& config) { return comm_timer_with(config, spawn_ranks); }

CommTimer comm_timer_with(const LocalCommTimerConfig& config, CommRanksRunner runner) {
  return [config, runner = std::move(runner)](const std::vector<CommToMeasure>& plans, int64_t batch_size) {
    return time_plans(config, runner, plans, batch_size);
  };
}

}  // namespace shardplan
