// The all-to-all collector: one process per rank, rendezvous over c10d's TCP store, collectives through a
// c10d process group (c10d_job), the ranks agreeing on settings, start and stop (comm_handshake), each
// sample timed on every rank (comm_sample) and written by rank 0, every wait watched (watchdog).
#include "shardplan/torch/comm_benchmark.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "c10d_job.hpp"
#include "comm_handshake.hpp"
#include "comm_sample.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/core/progress.hpp"
#include "signals_blocked.hpp"
#include "watchdog.hpp"

namespace shardplan {

namespace {

using namespace collector;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;
constexpr int kMaxRepeats = 1000;
constexpr int kMaxGpusPerHost = 4096;

// The sample `index` times: the given workload, or the one drawn from the seed.
CommWorkload workload_at(const CommCollectConfig& config, int64_t index) {
  if (!config.given_workloads.empty()) return config.given_workloads[static_cast<std::size_t>(index)];
  CommWorkloadConfig drawn = config.workload;
  drawn.world_size = config.rendezvous.world_size;
  return draw_comm_workload(drawn, config.seed, index);
}

// The rank's connection: the world's group, its host's when a workload needs one, and every rank's host.
struct Connection {
  Job job;
  std::vector<std::string> hosts;
};

Connection connect_ranks(const CommCollectConfig& config, const std::string& backend, Watchdog& dog) {
  Connection connection{connect(config, backend, dog), {}};
  const bool host_groups = std::any_of(config.given_workloads.begin(), config.given_workloads.end(),
                                       [](const CommWorkload& w) { return !w.host_rw_dims.empty(); });
  if (host_groups) connect_host_group(connection.job, config, dog);
  Watched watched(dog, "exchanging host names");
  connection.hosts = exchange_host_names(connection.job);
  return connection;
}

// Rank 0's record of a sample: the workload and every rank's timing.
CommSample sample_of(const CommCollectConfig& config, const CommWorkload& w, const std::vector<Timing>& all) {
  CommSample sample;
  sample.world_size = config.rendezvous.world_size;
  sample.devices_per_host = config.gpus_per_host;
  sample.dim_sums = w.dim_sums;
  sample.rw_dim = w.rw_dim;
  sample.allreduce_floats = w.allreduce_floats;
  sample.host_rw_dims = w.host_rw_dims;
  for (const Timing& t : all) {
    sample.delays_ms.push_back(t.delay_ms);
    sample.fw_ms.push_back(t.fw_ms);
    sample.bw_ms.push_back(t.bw_ms);
    if (w.allreduce_floats > 0) sample.allreduce_ms.push_back(t.allreduce_ms);
  }
  return sample;
}

// One collection on a connected job, each blocking step watched: the ranks agree on the start, warm up,
// then time samples up to config.samples (or a stop every rank agrees on), rank 0 writing each. The phase
// and the sample it is at name the step that failed when a peer does.
class Collection {
 public:
  Collection(const CommCollectConfig& config, Job& job, Watchdog& dog)
      : config_(config), job_(job), dog_(dog), buffers_(job.float_options) {}

  void collect(const std::string& backend, const std::vector<std::string>& hosts, CollectSummary& summary) {
    agree_on_start(backend, hosts, summary);
    if (summary.existing >= config_.samples) return;
    warm_up(summary.existing);
    time_samples(summary);
    final_barrier();
  }

  // LibTorch's threads may stay blocked on a dead peer until the timeout, and joining them would delay the
  // error, so they are left to the process exit. Typed errors pass as they are; others say which step of
  // which sample failed.
  [[noreturn]] void fail(const std::exception& e) {
    static_cast<void>(job_.group.release());
    static_cast<void>(job_.host_group.release());
    static_cast<void>(job_.store.release());
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    std::string step = current_ >= 0 ? fmt::format("{} of sample {}", phase_, current_) : std::string(phase_);
    throw RuntimeFailure(
        fmt::format("rank {}: {} failed (a peer died, hung or left; waits are bounded by the timeout of {} s): {}",
                    job_.rank, step, config_.timeout_s, message_of(e)));
  }

  void close() {
    Watched watched(dog_, "shutting down the process group");
    writer_.reset();
    job_.group.reset();
    job_.store.reset();
  }

 private:
  void agree_on_start(const std::string& backend, const std::vector<std::string>& hosts, CollectSummary& summary) {
    {
      Watched watched(dog_, phase_);
      summary.existing = collector::agree_on_start(job_, config_, writer_, backend, hosts);
    }
    const bool leader = job_.rank == 0;
    if (summary.existing >= config_.samples) {
      if (leader) {
        spdlog::info("{}: already holds {} samples (asked for {}); nothing to do", config_.out_dir, summary.existing,
                     config_.samples);
      }
      return;
    }
    if (leader && summary.existing > 0) {
      spdlog::info("{}: resuming after {} samples", config_.out_dir, summary.existing);
    }
    spdlog::debug("rank {}: {} ranks connected ({}, batch {})", job_.rank, job_.world, backend, config_.batch_size);
  }

  void warm_up(int64_t first) {
    phase_ = "warm-up all-to-all";
    const CommWorkload w = workload_at(config_, first);
    for (int round = 0; round < config_.warmup_rounds; ++round) {
      Watched watched(dog_, phase_);
      run_sample(job_, buffers_, w, local_batch(), /*timed=*/false);
    }
  }

  void time_samples(CollectSummary& summary) {
    const bool leader = job_.rank == 0;
    Progress progress("samples", config_.samples, summary.existing, config_.quiet || !leader);
    for (current_ = summary.existing; current_ < config_.samples; ++current_) {
      Watched watched(dog_, fmt::format("sample {}", current_));
      phase_ = "the stop check";
      if (agree_to_stop(job_)) {
        summary.interrupted = true;
        break;
      }
      const CommWorkload w = workload_at(config_, current_);
      phase_ = "the all-to-alls";
      Timing mine = run_sample_repeated(job_, buffers_, w, local_batch(), config_.repeats);
      phase_ = "gathering the timings";
      std::vector<Timing> all = gather_timings(job_, mine);
      if (leader) {
        CommSample sample = sample_of(config_, w, all);
        writer_->append(comm_sample_to_json(sample));
        progress.update(current_ + 1,
                        fmt::format("median fw {:.2f} ms, bw {:.2f} ms", median(sample.fw_ms), median(sample.bw_ms)));
      }
      ++summary.written;
    }
    progress.finish();
  }

  // Nobody tears down its process group while a peer still talks to it.
  void final_barrier() {
    phase_ = "the final barrier";
    current_ = -1;
    Watched watched(dog_, phase_);
    job_.finish(job_.group->barrier());
  }

  int64_t local_batch() const { return config_.batch_size / config_.rendezvous.world_size; }

  const CommCollectConfig& config_;
  Job& job_;
  Watchdog& dog_;
  Buffers buffers_;
  std::optional<CostDataWriter> writer_;  // rank 0's
  const char* phase_ = "agreeing on the settings";
  int64_t current_ = -1;
};

}  // namespace

std::string resolve_comm_backend(const std::string& requested) {
  const bool cuda = nccl_compiled() && torch::cuda::is_available();
  std::string backend = requested;
  if (requested == "auto") {
    backend = cuda || !gloo_compiled() ? "nccl" : "gloo";
  } else if (requested != "gloo" && requested != "nccl") {
    throw SettingError("backend", fmt::format("must be gloo, nccl or auto, got '{}'", requested));
  }
  if (backend == "gloo" && !gloo_compiled()) {
    throw SettingError("backend",
                       "gloo: this build has no Gloo collector, because Gloo's headers (gloo/algorithm.h) "
                       "were not found when it was built. Install them (Debian: libgloo-dev; conda: "
                       "conda install -c conda-forge gloo) and build shard-plan again");
  }
  if (backend == "nccl" && !nccl_compiled()) {
    throw SettingError("backend",
                       "nccl: this build has no NCCL collector. It is built against a CUDA build of torch when "
                       "NCCL's header (nccl.h: the CUDA toolkit's, pip's nvidia-nccl wheel's or conda's nccl) is "
                       "found; build shard-plan again in such an environment (docs/torchrec.md)");
  }
  if (backend == "nccl" && !cuda) throw SettingError("backend", "nccl requested but no CUDA device is visible");
  return backend;
}

std::vector<std::string> compiled_comm_backends() {
  std::vector<std::string> out;
  if (gloo_compiled()) out.emplace_back("gloo");
  if (nccl_compiled()) out.emplace_back("nccl");
  return out;
}

void validate_comm_timing(int repeats, double timeout_s, int64_t batch_size) {
  if (repeats < 1 || repeats > kMaxRepeats) {
    throw SettingError("repeats", fmt::format("must be in [1, {}], got {}", kMaxRepeats, repeats));
  }
  if (!(timeout_s > 0.0 && timeout_s <= kCommTimeoutLimitSeconds)) {
    throw SettingError("timeout",
                       fmt::format("must be in (0, {}] seconds, got {}", kCommTimeoutLimitSeconds, timeout_s));
  }
  if (batch_size < 1 || batch_size > kMaxBatchSize) {
    throw SettingError("batch size", fmt::format("must be in [1, {}], got {}", kMaxBatchSize, batch_size));
  }
}

void validate_comm_collection(const CommCollectConfig& config) {
  const CommRendezvous& where = config.rendezvous;
  const auto listed = static_cast<int64_t>(config.given_workloads.size());
  if (config.samples < 1) throw SettingError("samples", fmt::format("must be at least 1, got {}", config.samples));
  if (listed > 0 && config.samples > listed) {
    throw SettingError("samples", fmt::format("must not exceed the {} workloads of {}, got {}", listed,
                                              given_workloads_source(config), config.samples));
  }
  validate_comm_timing(config.repeats, config.timeout_s, config.batch_size);
  resolve_comm_backend(config.backend);
  if (config.gpus_per_host < 0 || config.gpus_per_host > kMaxGpusPerHost) {
    throw SettingError("GPUs per host",
                       fmt::format("must be in [0, {}], got {}", kMaxGpusPerHost, config.gpus_per_host));
  }
  CommWorkloadConfig workload = config.workload;
  workload.world_size = where.world_size;
  validate_comm_workload(workload);
  if (where.rank < 0 || where.rank >= where.world_size) {
    throw SettingError("rank", fmt::format("must be in [0, {}) for world size {}, got {}", where.world_size,
                                           where.world_size, where.rank));
  }
  if (config.batch_size % where.world_size != 0) {
    throw SettingError("batch size", fmt::format("must be a multiple of the world size {} (each rank owns batch / "
                                                 "world size samples), got {}",
                                                 where.world_size, config.batch_size));
  }
  check_given_comm_workloads(config.given_workloads, given_workloads_source(config), where.world_size,
                             config.gpus_per_host, config.batch_size);
}

std::string given_workloads_source(const CommCollectConfig& config) {
  return config.workloads_path.empty() ? "the given workloads" : config.workloads_path;
}

CollectSummary run_comm_collection(const CommCollectConfig& config) {
  validate_comm_collection(config);
  const std::string backend = resolve_comm_backend(config.backend);
  install_interrupt_handlers();
  // The watchdog's and LibTorch's threads start with SIGINT and SIGTERM blocked (signals_blocked.hpp).
  std::optional<SignalsBlocked> blocked(std::in_place);
  Watchdog dog(config.rendezvous.rank, config.timeout_s + kCommWatchdogGraceSeconds);
  Connection connection = connect_ranks(config, backend, dog);
  blocked.reset();

  CollectSummary summary;
  Collection collection(config, connection.job, dog);
  const auto start_time = Clock::now();
  try {
    collection.collect(backend, connection.hosts, summary);
  } catch (const std::exception& e) {
    collection.fail(e);
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - start_time).count();
  collection.close();
  return summary;
}

}  // namespace shardplan
