#include "comm_collection_meta.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <thread>

#if defined(SHARDPLAN_WITH_NCCL)
#include <ATen/cuda/CUDAContext.h>
#endif

#include "c10d_job.hpp"
#include "shardplan/core/version.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan::collector {

namespace {

constexpr const char* kTimingDescription =
    "per rank: barrier, sleep delays_ms, then fw_ms = forward all-to-all (sends (B/W) x dim_sum[self] "
    "floats to every rank, receives (B/W) x dim_sum[i] from rank i; includes waiting for later ranks); "
    "barrier, then bw_ms = backward all-to-all of the gradients (the reverse shapes, no delays). "
    "delays_ms are measured (barrier exit to all-to-all start). Each sample runs `repeats` times, a barrier "
    "before each; every rank records the median of its own delay, fw and bw. Given workloads with rw_dim add "
    "the row-wise tables' reduce-scatter (local_batch x rw_dim floats per rank; on Gloo an all-to-all of "
    "equal blocks and their sum) to fw_ms and their all-gather to bw_ms; with allreduce_floats, a barrier "
    "and then allreduce_ms = an all-reduce of that many floats (the data-parallel gradients).";

// Anything that changes what a sample means: a directory is resumed only with the same.
nlohmann::json collection_settings(const CommCollectConfig& config, const std::string& backend,
                                   const std::string& device) {
  const CommWorkloadConfig& w = config.workload;
  nlohmann::json settings = {{"world_size", config.rendezvous.world_size},
                             {"batch_size", config.batch_size},
                             {"backend", backend},
                             {"device", device},
                             {"dtype", "float32"},
                             {"seed", config.seed},
                             {"workload", config.given_workloads.empty() ? kCommWorkloadScheme : "given"},
                             {"max_delay_ms", w.max_delay_ms},
                             {"zero_delay_fraction", w.zero_delay_fraction},
                             {"max_mean_shards", w.max_mean_shards},
                             {"max_skew", w.max_skew},
                             {"repeats", config.repeats}};
  if (config.gpus_per_host > 0) settings["gpus_per_host"] = config.gpus_per_host;
  if (!config.given_workloads.empty()) {
    settings["workloads_digest"] = fmt::format("{:016x}", comm_workloads_digest(config.given_workloads));
  }
  return settings;
}

}  // namespace

nlohmann::json comm_collection_meta(const CommCollectConfig& config, const std::string& backend,
                                    const std::vector<std::string>& hosts) {
  const std::string device = backend == "nccl" ? "cuda" : "cpu";
  std::string gpu_model;
#if defined(SHARDPLAN_WITH_NCCL)
  if (backend == "nccl") gpu_model = at::cuda::getCurrentDeviceProperties()->name;
#endif
  return {{"kind", "comm"},
          {"config", collection_settings(config, backend, device)},
          {"world_size", config.rendezvous.world_size},
          {"backend", backend},
          {"device", device},
          {"device_model", backend == "nccl" ? gpu_model : cpu_model()},
          {"cpu_model", cpu_model()},
          {"gpu_model", backend == "nccl" ? nlohmann::json(gpu_model) : nlohmann::json(nullptr)},
          {"threads", at::get_num_threads()},
          {"gloo_threads", backend == "gloo" ? nlohmann::json(kGlooThreads) : nlohmann::json(nullptr)},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"torch_version", torch_version()},
          {"shard_plan_version", kVersion},
          {"batch_size", config.batch_size},
          {"seed", config.seed},
          {"host", hosts.empty() ? host_name() : hosts.front()},
          {"hosts", hosts},
          {"date", utc_now()},
          {"load_average_at_start", load_average()},
          {"command", config.command_line},
          {"workloads_file",
           config.workloads_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(config.workloads_path)},
          {"timeout_s", config.timeout_s},
          {"timing", kTimingDescription}};
}

}  // namespace shardplan::collector
