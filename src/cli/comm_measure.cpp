#include "comm_measure.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "shardplan/core/errors.hpp"

#if SHARDPLAN_WITH_TORCH
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/comm_spawn.hpp"
#include "shardplan/costs/comm_workload.hpp"
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

#if SHARDPLAN_WITH_TORCH
namespace {

// A private directory that is removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "shard-plan-comm-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw RuntimeFailure("cannot create a scratch directory in " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

constexpr double kMaxHostAllreduceBytes = 8.0 * (1ull << 30);

// Times `plans` (all of `world_size` devices) in one spawned collection; one result per plan.
// Plans with table-row-wise tables run their host's collectives in groups of `devices_per_host` ranks.
std::vector<std::optional<MeasuredComm>> time_world(const CommMeasureFlags& flags, int world_size, int devices_per_host,
                                                    const std::vector<const CommToMeasure*>& plans, bool quiet) {
  std::vector<std::optional<MeasuredComm>> results(plans.size());
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
  for (int r = 0; r < flags.rounds; ++r) workloads.insert(workloads.end(), round.begin(), round.end());
  ScratchDir scratch;
  const std::string workloads_path = scratch.path("workloads.json");
  const std::string out = scratch.path("timed");
  write_comm_workloads(workloads_path, world_size, workloads);

  SpawnConfig spawn;
  spawn.executable = current_executable();
  spawn.world_size = world_size;
  spawn.args = {"collect-costs", "comm",
                "--workloads",   workloads_path,
                "--out",         out,
                "--batch-size",  std::to_string(flags.batch_size),
                "--repeats",     std::to_string(flags.repeats),
                "--timeout",     fmt::format("{}", flags.timeout_s)};
  if (devices_per_host > 0) {
    spawn.args.emplace_back("--gpus-per-host");
    spawn.args.push_back(std::to_string(devices_per_host));
  }
  if (quiet) spawn.args.emplace_back("--quiet");
  spawn.launch_command = "shard-plan bench --measure-comm";
  spdlog::info("timing the collectives of {} plans on {} ranks, {} rounds", plans.size(), world_size, flags.rounds);
  if (int status = spawn_local_ranks(spawn); status != 0) {
    spdlog::warn("--measure-comm: timing the collectives on {} ranks failed (exit {}); their steps are not measured",
                 world_size, status);
  }
  // Sample k is plan k % plans.size() in round k / plans.size(); an interrupted run leaves later ones out.
  std::optional<CostData> timed = find_cost_data(out, CostKind::kComm);
  const std::size_t done = timed ? timed->comm.size() : 0;
  for (std::size_t k = 0; k < done; ++k) {
    const CommSample& sample = timed->comm[k];
    std::optional<MeasuredComm>& result = results[k % plans.size()];
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

}  // namespace

std::vector<std::optional<MeasuredComm>> measure_comm_on_this_host(const CommMeasureFlags& flags,
                                                                   const std::vector<CommToMeasure>& plans,
                                                                   bool quiet) {
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
    if (world_size > flags.max_ranks) {
      spdlog::warn("--measure-comm: {} plans on {} GPUs not timed: more than --measure-comm-max-ranks {} processes",
                   indices.size(), world_size, flags.max_ranks);
      continue;
    }
    if (flags.batch_size % world_size != 0) {
      spdlog::warn(
          "--measure-comm: {} plans on {} GPUs not timed: --measure-comm-batch-size {} is not a multiple of {}",
          indices.size(), world_size, flags.batch_size, world_size);
      continue;
    }
    // Every rank runs on this host and holds the whole gradient: a plan whose replicas would need more
    // than kMaxHostAllreduceBytes in all is left untimed rather than failing the others' collection.
    std::vector<std::size_t> timed_indices;
    std::vector<const CommToMeasure*> group;
    for (std::size_t i : indices) {
      const double host_bytes = 4.0 * static_cast<double>(plans[i].allreduce_floats) * world_size;
      if (host_bytes > kMaxHostAllreduceBytes) {
        spdlog::warn(
            "--measure-comm: a plan on {} GPUs not timed: its data-parallel gradients need {:.1f} GiB on "
            "this host's {} ranks, over {:.0f} GiB",
            world_size, host_bytes / (1ull << 30), world_size, kMaxHostAllreduceBytes / (1ull << 30));
        continue;
      }
      timed_indices.push_back(i);
      group.push_back(&plans[i]);
    }
    if (group.empty()) continue;
    std::vector<std::optional<MeasuredComm>> timed = time_world(flags, world_size, devices_per_host, group, quiet);
    for (std::size_t k = 0; k < timed_indices.size(); ++k) results[timed_indices[k]] = std::move(timed[k]);
  }
  return results;
}
#else
std::vector<std::optional<MeasuredComm>> measure_comm_on_this_host(const CommMeasureFlags& flags,
                                                                   const std::vector<CommToMeasure>& plans,
                                                                   bool quiet) {
  (void)flags, (void)plans, (void)quiet;
  throw InputError("--measure-comm: this shard-plan was built without LibTorch, which timing the all-to-alls needs");
}
#endif

}  // namespace shardplan::cli
