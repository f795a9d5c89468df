// The all-to-all collector: one process per rank, rendezvous over c10d's TCP store, collectives through a
// c10d process group (Gloo on CPU tensors; NCCL on CUDA tensors when this LibTorch has them). The only
// translation unit of the collector that includes LibTorch headers.
#include "shardplan/torch/comm_benchmark.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/costs/provenance.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

// LibTorch 2 made the process groups backends behind a dispatching ProcessGroup; the collectives this file
// calls are the backends' own, so it holds the backend directly (1.13's groups were ProcessGroups).
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
namespace shardplan {
using CollectiveGroup = c10d::Backend;
}
#else
namespace shardplan {
using CollectiveGroup = c10d::ProcessGroup;
}
#endif

#if defined(SHARDPLAN_WITH_NCCL)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/version.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kGlooThreads = 2;  // c10d's default worker threads per Gloo process group
constexpr double kMaxGivenBufferBytes = 8.0 * (1ull << 30);

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// LibTorch's errors carry a C++ backtrace in what(); users need the message only.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

bool nccl_compiled() {
#if defined(SHARDPLAN_WITH_NCCL)
  return true;
#else
  return false;
#endif
}

// c10d bounds its own waits by the timeout, but not every path (a TCP store server whose workers never
// come, a process-group destructor joining a stuck thread). The watchdog turns any wait that outlives
// timeout + grace into exit status 1 with a message, so a rank never hangs whatever its peers do.
class Watchdog {
 public:
  Watchdog(int rank, double limit_seconds)
      : rank_(rank),
        limit_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_seconds))),
        thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = std::move(what);
    deadline_ = Clock::now() + limit_;
    armed_ = true;
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (armed_ && Clock::now() > deadline_) {
        fmt::print(stderr,
                   "shard-plan: error: rank {}: {} made no progress for {:.0f} s (a peer died, hung or never "
                   "arrived); aborting\n",
                   rank_, what_, std::chrono::duration<double>(limit_).count());
        std::fflush(stderr);
        std::_Exit(static_cast<int>(ExitCode::kRuntimeFailure));
      }
    }
  }

  int rank_;
  Clock::duration limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool armed_ = false;
  std::string what_;
  Clock::time_point deadline_{};
  std::thread thread_;  // last: started once the members it reads exist
};

// Watches one blocking step.
class Watched {
 public:
  Watched(Watchdog& dog, std::string what) : dog_(dog) { dog_.arm(std::move(what)); }
  ~Watched() { dog_.disarm(); }
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;

 private:
  Watchdog& dog_;
};

// Threads inherit the creating thread's signal mask. Blocking SIGINT and SIGTERM while the watchdog, the
// TCP store and Gloo start their threads sends those signals to the main thread only, where the handler
// just sets the interrupt flag, instead of interrupting a socket call inside Gloo.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &saved_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t saved_{};
};

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// Gloo's transport: the interface named by GLOO_SOCKET_IFNAME (as PyTorch honours it), loopback when the
// whole job is local, else the address this host's name resolves to (c10d's default).
std::shared_ptr<::gloo::transport::Device> gloo_device(const CommRendezvous& where) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface != nullptr && *interface != '\0') {
    std::string first(interface);
    first = first.substr(0, first.find(','));
    return c10d::ProcessGroupGloo::createDeviceForInterface(first);
  }
  if (is_loopback(where.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

struct Job {
  int rank = 0;
  int world = 0;
  at::TensorOptions float_options;
  at::TensorOptions long_options;
  at::TensorOptions double_options;
  bool cuda = false;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<CollectiveGroup> group;
  // This rank's host's ranks (table-row-wise tables' collectives); null unless a workload needs them.
  c10::intrusive_ptr<CollectiveGroup> host_group;
  int host_size = 0;

  // Waits for a collective; on CUDA also for the stream, so the clock covers the transfer itself.
  void finish(const c10::intrusive_ptr<c10d::Work>& work) const {
    work->wait();
    if (cuda) torch::cuda::synchronize();
  }
};

Job connect(const CommCollectConfig& config, const std::string& backend, Watchdog& dog) {
  const CommRendezvous& where = config.rendezvous;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000.0));
  Job job;
  job.rank = where.rank;
  job.world = where.world_size;
  job.cuda = backend == "nccl";
  at::Device device = at::kCPU;
#if defined(SHARDPLAN_WITH_NCCL)
  if (job.cuda) {
    int count = static_cast<int>(c10::cuda::device_count());
    if (where.local_rank >= count) {
      throw InputError(fmt::format("rank {}: LOCAL_RANK {} but this host has {} CUDA device(s)", where.rank,
                                   where.local_rank, count));
    }
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(where.local_rank));
    device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(where.local_rank));
  }
#endif
  job.float_options = at::TensorOptions().dtype(at::kFloat).device(device);
  job.long_options = at::TensorOptions().dtype(at::kLong).device(device);
  job.double_options = at::TensorOptions().dtype(at::kDouble).device(device);

  std::string endpoint = fmt::format("{}:{}", where.master_addr, where.master_port);
  try {
    Watched watched(dog, fmt::format("the rendezvous at {}", endpoint));
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(where.master_port);
    store_options.isServer = where.rank == 0;
    store_options.numWorkers = static_cast<std::size_t>(where.world_size);
    // The process group's own rendezvous waits for every rank (bounded by the timeout); waiting for the
    // workers here as well would double the time a missing rank takes to be reported.
    store_options.waitWorkers = false;
    store_options.timeout = timeout;
    job.store = c10::make_intrusive<c10d::TCPStore>(where.master_addr, store_options);
    if (job.cuda) {
#if defined(SHARDPLAN_WITH_NCCL)
      // Blocking waits make wait() honour the timeout instead of hanging on a dead peer.
      ::setenv("NCCL_BLOCKING_WAIT", "1", 0);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      job.group = c10::make_intrusive<c10d::ProcessGroupNCCL>(job.store, where.rank, where.world_size, options);
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(where));
      options->threads = kGlooThreads;
      job.group = c10::make_intrusive<c10d::ProcessGroupGloo>(job.store, where.rank, where.world_size, options);
    }
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format(
        "rank {}: rendezvous of {} ranks at {} ({}) failed within --timeout {} s: {} (did every rank start, with "
        "the same WORLD_SIZE, MASTER_ADDR and MASTER_PORT?)",
        where.rank, where.world_size, endpoint,
        where.rank == 0 ? "this rank serves the store there" : "served by rank 0", config.timeout_s, message_of(e)));
  }
  return job;
}

// The group of this rank's host (ranks h*K ... h*K+K-1), on the same store under the host's prefix:
// table-row-wise tables reduce-scatter and all-gather within it, as TorchRec's intra-host group does.
void connect_host_group(Job& job, const CommCollectConfig& config, Watchdog& dog) {
  const int per_host = config.gpus_per_host;
  const int host = job.rank / per_host;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000.0));
  Watched watched(dog, fmt::format("the rendezvous of host {}'s {} ranks", host, per_host));
  auto store = c10::make_intrusive<c10d::PrefixStore>(fmt::format("host{}/", host), job.store);
  try {
    if (job.cuda) {
#if defined(SHARDPLAN_WITH_NCCL)
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      job.host_group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, job.rank % per_host, per_host, options);
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(config.rendezvous));
      options->threads = kGlooThreads;
      job.host_group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, job.rank % per_host, per_host, options);
    }
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format("rank {}: the rendezvous of host {}'s {} ranks failed within --timeout {} s: {}",
                                     job.rank, host, per_host, config.timeout_s, message_of(e)));
  }
  job.host_size = per_host;
}

nlohmann::json collection_meta(const CommCollectConfig& config, const std::string& backend,
                               const std::vector<std::string>& hosts) {
  const CommWorkloadConfig& w = config.workload;
  const std::string device = backend == "nccl" ? "cuda" : "cpu";
  std::string gpu_model;
#if defined(SHARDPLAN_WITH_NCCL)
  if (backend == "nccl") gpu_model = at::cuda::getCurrentDeviceProperties()->name;
#endif
  // "config" must match for a directory to be resumed: anything that changes what a sample means.
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
  return {{"kind", "comm"},
          {"config", settings},
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
          {"timing",
           "per rank: barrier, sleep delays_ms, then fw_ms = forward all-to-all (sends (B/W) x dim_sum[self] "
           "floats to every rank, receives (B/W) x dim_sum[i] from rank i; includes waiting for later ranks); "
           "barrier, then bw_ms = backward all-to-all of the gradients (the reverse shapes, no delays). "
           "delays_ms are measured (barrier exit to all-to-all start). Each sample runs `repeats` times, a barrier "
           "before each; every rank records the median of its own delay, fw and bw. Given workloads with rw_dim add "
           "the row-wise tables' reduce-scatter (local_batch x rw_dim floats per rank; on Gloo an all-to-all of "
           "equal blocks and their sum) to fw_ms and their all-gather to bw_ms; with allreduce_floats, a barrier "
           "and then allreduce_ms = an all-reduce of that many floats (the data-parallel gradients)."}};
}

// Settings every rank must share, as rank 0 broadcasts them; a rank with different ones would deadlock
// or measure something else.
std::vector<int64_t> shared_settings(const CommCollectConfig& config) {
  int64_t seed_bits = 0;
  std::memcpy(&seed_bits, &config.seed, sizeof(seed_bits));
  return {config.rendezvous.world_size,
          config.samples,
          config.batch_size,
          seed_bits,
          static_cast<int64_t>(config.workload.max_delay_ms * 1000.0 + 0.5),
          static_cast<int64_t>(config.workload.zero_delay_fraction * 1e6 + 0.5),
          config.workload.max_mean_shards,
          config.workload.max_skew,
          config.warmup_rounds,
          config.repeats,
          static_cast<int64_t>(config.given_workloads.empty() ? 0 : comm_workloads_digest(config.given_workloads) >> 1),
          config.gpus_per_host};
}

constexpr const char* kSharedSettingNames[] = {
    "--world-size", "--samples", "--batch-size",   "--seed",    "--max-delay (us)",     "zero-delay fraction (ppm)",
    "mean shards",  "skew",      "warm-up rounds", "--repeats", "--workloads (digest)", "--gpus-per-host"};

// Reusable buffers that only grow, filled once, so no allocation or first-touch page fault happens inside
// a timed collective. One per role: the pooled embeddings this rank sends, those it receives, the
// row-wise partial sums with their scratch (also the replicas' gradients), this rank's row-wise sums, and
// the same two for table-row-wise tables within the host.
class Buffers {
 public:
  explicit Buffers(const at::TensorOptions& options) : options_(options) {}
  at::Tensor sent(int64_t count) { return take(sent_, count); }
  at::Tensor received(int64_t count) { return take(received_, count); }
  at::Tensor row_partials(int64_t count) { return take(row_partials_, count); }
  at::Tensor row_sums(int64_t count) { return take(row_sums_, count); }
  at::Tensor host_row_partials(int64_t count) { return take(host_row_partials_, count); }
  at::Tensor host_row_sums(int64_t count) { return take(host_row_sums_, count); }

 private:
  at::Tensor take(at::Tensor& buffer, int64_t count) {
    if (!buffer.defined() || buffer.numel() < count) buffer = at::ones({std::max<int64_t>(count, 1)}, options_);
    return buffer.narrow(0, 0, count);
  }
  at::TensorOptions options_;
  at::Tensor sent_;
  at::Tensor received_;
  at::Tensor row_partials_;
  at::Tensor row_sums_;
  at::Tensor host_row_partials_;
  at::Tensor host_row_sums_;
};

struct Timing {
  double delay_ms = 0.0;
  double fw_ms = 0.0;
  double bw_ms = 0.0;
  double allreduce_ms = 0.0;
};

// Row-wise tables' forward: each rank holds partial pooled sums of the whole batch (world x local_batch x
// rw_dim) and ends with the sums of its own samples (local_batch x rw_dim). NCCL reduce-scatters; Gloo in
// this LibTorch has no reduce_scatter, so it is the direct algorithm, the same bytes on the wire: an
// all-to-all of equal blocks and a sum of the blocks received.
// Table-row-wise tables do the same among their host's ranks (`group` of `size` ranks).
void reduce_scatter_rows(const Job& job, CollectiveGroup& group, int size, at::Tensor& partial, at::Tensor& received,
                         at::Tensor& mine) {
  if (job.cuda) {
    job.finish(group._reduce_scatter_base(mine, partial));
    return;
  }
  std::vector<int64_t> counts(static_cast<std::size_t>(size), mine.numel());
  std::vector<int64_t> recv_counts = counts;
  job.finish(group.alltoall_base(received, partial, recv_counts, counts));
  at::sum_out(mine, received.view({size, mine.numel()}), {0});
}

// Their backward: every rank's gradients for its samples go to every rank (all-gather).
void all_gather_rows(const Job& job, CollectiveGroup& group, int size, at::Tensor& mine, at::Tensor& gathered) {
  if (job.cuda) {
    job.finish(group._allgather_base(gathered, mine));
    return;
  }
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < size; ++r) outputs[0].push_back(gathered.narrow(0, r * mine.numel(), mine.numel()));
  std::vector<at::Tensor> inputs{mine};
  job.finish(group.allgather(outputs, inputs));
}

// One sample on this rank. Forward: this rank sends each rank j the rows of j's B/W samples of its own
// pooled embeddings ((B/W) x w_self floats) and receives (B/W) x w_i from each rank i. Backward sends
// the gradients back: the same blocks in the other direction.
Timing run_sample(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, bool timed) {
  const auto self = static_cast<std::size_t>(job.rank);
  std::vector<int64_t> fw_send(static_cast<std::size_t>(job.world), local_batch * w.dim_sums[self]);
  std::vector<int64_t> fw_recv;
  for (int64_t dim_sum : w.dim_sums) fw_recv.push_back(local_batch * dim_sum);
  int64_t send_total = 0;
  int64_t recv_total = 0;
  for (std::size_t i = 0; i < fw_send.size(); ++i) {
    send_total += fw_send[i];
    recv_total += fw_recv[i];
  }
  at::Tensor embeddings = buffers.sent(send_total);
  at::Tensor received = buffers.received(recv_total);
  // The row-wise and all-reduce buffers too, before the clock starts: growing one allocates and fills it.
  const int64_t rw_floats = local_batch * w.rw_dim;
  at::Tensor row_partials = buffers.row_partials(std::max(2 * job.world * rw_floats, w.allreduce_floats));
  at::Tensor rw_mine = buffers.row_sums(rw_floats);
  // The host's table-row-wise partial sums cover every sample (world x local_batch); each of its ranks
  // ends with 1/host_size of them, which the all-to-all then sends to their owners.
  const int64_t host_dim = w.host_rw_dims.empty() ? 0 : w.host_rw_dims[self];
  const int64_t host_mine_floats = job.host_size > 0 ? job.world / job.host_size * local_batch * host_dim : 0;
  at::Tensor host_partial = buffers.host_row_partials(2 * job.host_size * host_mine_floats);
  at::Tensor host_mine = buffers.host_row_sums(host_mine_floats);

  Timing timing;
  auto released = Clock::now();
  if (timed && w.delays_ms[self] > 0.0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(w.delays_ms[self]));
  }
  auto start = Clock::now();
  timing.delay_ms = std::chrono::duration<double, std::milli>(start - released).count();
  // alltoall_base takes the split sizes by reference and moves from them (c10d 1.13): pass copies.
  std::vector<int64_t> recv_counts = fw_recv;
  std::vector<int64_t> send_counts = fw_send;
  job.finish(job.group->alltoall_base(received, embeddings, recv_counts, send_counts));
  if (rw_floats > 0) {
    at::Tensor partial = row_partials.narrow(0, 0, job.world * rw_floats);
    at::Tensor scratch = row_partials.narrow(0, job.world * rw_floats, job.world * rw_floats);
    reduce_scatter_rows(job, *job.group, job.world, partial, scratch, rw_mine);
  }
  if (host_mine_floats > 0) {
    at::Tensor partial = host_partial.narrow(0, 0, job.host_size * host_mine_floats);
    at::Tensor scratch = host_partial.narrow(0, job.host_size * host_mine_floats, job.host_size * host_mine_floats);
    reduce_scatter_rows(job, *job.host_group, job.host_size, partial, scratch, host_mine);
  }
  timing.fw_ms = ms_since(start);

  job.finish(job.group->barrier());
  // The gradients of what this rank received go back to their owners: send fw_recv, receive fw_send.
  start = Clock::now();
  recv_counts = fw_send;
  send_counts = fw_recv;
  job.finish(job.group->alltoall_base(embeddings, received, recv_counts, send_counts));
  if (rw_floats > 0) {
    at::Tensor gathered = row_partials.narrow(0, 0, job.world * rw_floats);
    all_gather_rows(job, *job.group, job.world, rw_mine, gathered);
  }
  if (host_mine_floats > 0) {
    at::Tensor gathered = host_partial.narrow(0, 0, job.host_size * host_mine_floats);
    all_gather_rows(job, *job.host_group, job.host_size, host_mine, gathered);
  }
  timing.bw_ms = ms_since(start);

  if (w.allreduce_floats > 0) {
    // DDP all-reduces the replicas' gradients once the backward is done; timed from a common start.
    at::Tensor gradients = row_partials.narrow(0, 0, w.allreduce_floats);
    job.finish(job.group->barrier());
    start = Clock::now();
    std::vector<at::Tensor> tensors{gradients};
    job.finish(job.group->allreduce(tensors));
    timing.allreduce_ms = ms_since(start);
  }
  return timing;
}

// The sample run `repeats` times, each after a barrier so that every run's delays start together; the
// per-rank medians damp the scheduling noise of many ranks sharing few cores.
Timing run_sample_repeated(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, int repeats) {
  std::vector<double> delays, fw, bw, allreduce;
  for (int i = 0; i < repeats; ++i) {
    if (i > 0) job.finish(job.group->barrier());
    Timing t = run_sample(job, buffers, w, local_batch, /*timed=*/true);
    delays.push_back(t.delay_ms);
    fw.push_back(t.fw_ms);
    bw.push_back(t.bw_ms);
    allreduce.push_back(t.allreduce_ms);
  }
  return Timing{median(delays), median(fw), median(bw), median(allreduce)};
}

// Every rank's {delay, fw, bw} at every rank (rank 0 writes them).
std::vector<Timing> gather_timings(const Job& job, const Timing& mine) {
  std::vector<at::Tensor> input{at::tensor({mine.delay_ms, mine.fw_ms, mine.bw_ms, mine.allreduce_ms}, at::kDouble)
                                    .to(job.double_options.device())};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < job.world; ++r) output[0].push_back(at::empty({4}, job.double_options));
  job.finish(job.group->allgather(output, input));
  std::vector<Timing> all;
  for (const auto& t : output[0]) {
    at::Tensor cpu = t.cpu();
    const double* v = cpu.data_ptr<double>();
    all.push_back(Timing{v[0], v[1], v[2], v[3]});
  }
  return all;
}

// Any rank asked to stop (Ctrl-C or SIGTERM reaches every rank under torchrun, only the parent under
// --spawn, which forwards it): all stop before the same sample. Doubles as the barrier before a sample.
bool agree_to_stop(const Job& job) {
  std::vector<at::Tensor> flag{at::full({1}, interrupt_requested() ? 1 : 0, job.long_options)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  job.finish(job.group->allreduce(flag, options));
  return flag[0].cpu().item<int64_t>() > 0;
}

// Rank 0 opens the output and tells every rank where to start; every rank checks it was given the same
// settings. Returns the first sample index, or throws on every rank when any rank cannot go on.
int64_t agree_on_start(const Job& job, const CommCollectConfig& config, std::optional<CostDataWriter>& writer,
                       const std::string& backend, const std::vector<std::string>& hosts) {
  std::vector<int64_t> mine = shared_settings(config);
  // [status, first sample, settings...]; status: rank 0's exit code when it cannot open the output (1 or
  // 2), so every rank exits with the same code and --spawn reports bad input as bad input.
  std::vector<int64_t> message{0, 0};
  message.insert(message.end(), mine.begin(), mine.end());
  std::optional<std::string> open_error;
  std::optional<ExitCode> open_code;
  if (job.rank == 0) {
    try {
      writer.emplace(config.out_dir, collection_meta(config, backend, hosts));
      message[1] = writer->existing_samples();
    } catch (const Error& e) {
      open_error = e.what();
      open_code = e.code();
      message[0] = static_cast<int64_t>(e.code());
    }
  }
  std::vector<at::Tensor> broadcast{at::tensor(message, at::kLong).to(job.long_options.device())};
  job.finish(job.group->broadcast(broadcast));
  at::Tensor received = broadcast[0].cpu();
  const int64_t* values = received.data_ptr<int64_t>();

  std::string mismatch;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (values[i + 2] != mine[i] && mismatch.empty()) {
      mismatch =
          fmt::format("{} differs from rank 0's ({} here, {} there)", kSharedSettingNames[i], mine[i], values[i + 2]);
    }
  }
  std::vector<at::Tensor> trouble{at::full({1}, mismatch.empty() ? 0 : 1, job.long_options)};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  job.finish(job.group->allreduce(trouble, max));
  if (open_error) {
    if (*open_code == ExitCode::kBadInput) throw InputError(*open_error);
    throw RuntimeFailure(*open_error);
  }
  if (values[0] != 0) {
    std::string message_text = fmt::format("rank {}: rank 0 could not open --out (see its error)", job.rank);
    if (values[0] == static_cast<int64_t>(ExitCode::kBadInput)) throw InputError(message_text);
    throw RuntimeFailure(message_text);
  }
  if (!mismatch.empty()) {
    throw InputError(fmt::format("rank {}: {}; every rank must be started with the same options", job.rank, mismatch));
  }
  if (trouble[0].cpu().item<int64_t>() != 0) {
    throw InputError(fmt::format("rank {}: another rank was started with different options (see its error)", job.rank));
  }
  return values[1];
}

std::vector<std::string> exchange_host_names(const Job& job) {
  const std::string key_prefix = "shard-plan/host/";
  std::string mine = host_name();
  job.store->set(key_prefix + std::to_string(job.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> hosts;
  if (job.rank == 0) {
    for (int r = 0; r < job.world; ++r) {
      std::vector<uint8_t> value = job.store->get(key_prefix + std::to_string(r));
      hosts.emplace_back(value.begin(), value.end());
    }
  }
  return hosts;
}

// Given workloads must fit the collection: one per sample, every rank listed, buffers within reason.
void check_given_workloads(const CommCollectConfig& config, int64_t local_batch) {
  const auto& given = config.given_workloads;
  if (given.empty()) return;
  const std::string source = config.workloads_path.empty() ? "--workloads" : config.workloads_path;
  if (config.samples > static_cast<int64_t>(given.size())) {
    throw InputError(
        fmt::format("--samples: must not exceed the {} workloads of {}, got {}", given.size(), source, config.samples));
  }
  const auto ranks = static_cast<std::size_t>(config.rendezvous.world_size);
  const int per_host = config.gpus_per_host;
  // Buffers only grow, so a rank ends up holding each one's largest size over the list.
  std::array<double, 6> largest{};
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (given[i].dim_sums.size() != ranks || given[i].delays_ms.size() != ranks) {
      throw InputError(fmt::format("{}: workloads[{}]: must list the {} ranks of the world size", source, i, ranks));
    }
    int64_t host_dim = 0;
    if (!given[i].host_rw_dims.empty()) {
      if (given[i].host_rw_dims.size() != ranks) {
        throw InputError(
            fmt::format("{}: workloads[{}].host_rw_dims: must list the {} ranks of the world size", source, i, ranks));
      }
      if (per_host < 2 || ranks % static_cast<std::size_t>(per_host) != 0) {
        throw InputError(
            fmt::format("--gpus-per-host: workloads with host_rw_dims need hosts of at least 2 ranks that "
                        "divide the world size {}, got {}",
                        ranks, per_host));
      }
      for (std::size_t r = 0; r < ranks; ++r) {
        const int64_t first =
            given[i].host_rw_dims[r / static_cast<std::size_t>(per_host) * static_cast<std::size_t>(per_host)];
        if (given[i].host_rw_dims[r] != first) {
          throw InputError(
              fmt::format("{}: workloads[{}].host_rw_dims[{}]: must be its host's value {} (hosts of {} "
                          "ranks), got {}",
                          source, i, r, first, per_host, given[i].host_rw_dims[r]));
        }
        host_dim = std::max(host_dim, given[i].host_rw_dims[r]);
      }
    }
    // Each rank holds a send and a receive buffer of local_batch x (sum of widths) floats, the row-wise
    // reduce-scatter's two of world x local_batch x rw_dim (or the all-reduce's gradients) and its own part.
    int64_t width = 0;
    for (int64_t d : given[i].dim_sums) width += d;
    const double rw_floats = static_cast<double>(local_batch) * static_cast<double>(given[i].rw_dim);
    const double row_partials =
        std::max(2.0 * static_cast<double>(ranks) * rw_floats, static_cast<double>(given[i].allreduce_floats));
    // The host's table-row-wise reduce-scatter: two of world x local_batch x its width, and its own part.
    const double host_floats = static_cast<double>(local_batch) * static_cast<double>(host_dim);
    const double host_mine =
        per_host > 0 ? static_cast<double>(ranks / static_cast<std::size_t>(std::max(per_host, 1))) * host_floats : 0.0;
    const std::array<double, 6> sizes{static_cast<double>(local_batch) * static_cast<double>(width),
                                      static_cast<double>(local_batch) * static_cast<double>(width),
                                      row_partials,
                                      rw_floats,
                                      2.0 * static_cast<double>(ranks) * host_floats,
                                      host_mine};
    double bytes = 0.0;
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      bytes += sizes[b] * sizeof(float);
      largest[b] = std::max(largest[b], sizes[b]);
    }
    if (bytes > kMaxGivenBufferBytes) {
      throw InputError(
          fmt::format("{}: workloads[{}]: its dim_sums, rw_dim, allreduce_floats and host_rw_dims need {:.1f} GiB of "
                      "buffers per rank at batch {}, over the limit of {:.0f} GiB",
                      source, i, bytes / (1ull << 30), config.batch_size, kMaxGivenBufferBytes / (1ull << 30)));
    }
  }
  double held = 0.0;
  for (double floats : largest) held += floats * sizeof(float);
  if (held > kMaxGivenBufferBytes) {
    throw InputError(
        fmt::format("{}: workloads: together need {:.1f} GiB of buffers per rank at batch {} (each buffer "
                    "keeps its largest size), over the limit of {:.0f} GiB",
                    source, held / (1ull << 30), config.batch_size, kMaxGivenBufferBytes / (1ull << 30)));
  }
}

}  // namespace

std::string resolve_comm_backend(const std::string& requested) {
  if (requested == "gloo") return "gloo";
  if (requested == "nccl") {
    if (!nccl_compiled()) {
      throw InputError(
          "--backend: nccl needs shard-plan built against a LibTorch with CUDA and NCCL "
          "(-DSHARDPLAN_WITH_NCCL=ON); this build has only Gloo (CPU); use --backend gloo");
    }
    if (!torch::cuda::is_available()) throw InputError("--backend: nccl requested but no CUDA device is visible");
    return "nccl";
  }
  if (requested == "auto") return nccl_compiled() && torch::cuda::is_available() ? "nccl" : "gloo";
  throw InputError(fmt::format("--backend: must be gloo, nccl or auto, got '{}'", requested));
}

CollectSummary run_comm_collection(const CommCollectConfig& config) {
  const CommRendezvous& where = config.rendezvous;
  CommWorkloadConfig workload = config.workload;
  workload.world_size = where.world_size;
  validate_comm_workload(workload);
  if (where.rank < 0 || where.rank >= where.world_size) {
    throw InputError(fmt::format("RANK: must be in [0, {}) for world size {}, got {}", where.world_size,
                                 where.world_size, where.rank));
  }
  if (config.samples < 1) throw InputError(fmt::format("--samples: must be at least 1, got {}", config.samples));
  if (config.repeats < 1 || config.repeats > 1000) {
    throw InputError(fmt::format("--repeats: must be in [1, 1000], got {}", config.repeats));
  }
  if (config.batch_size < where.world_size || config.batch_size % where.world_size != 0) {
    throw InputError(
        fmt::format("--batch-size: must be a positive multiple of the world size {} (each rank owns "
                    "batch / W samples), got {}",
                    where.world_size, config.batch_size));
  }
  if (!(config.timeout_s > 0.0)) throw InputError(fmt::format("--timeout: must be positive, got {}", config.timeout_s));
  const std::string backend = resolve_comm_backend(config.backend);
  const bool leader = where.rank == 0;
  const int64_t local_batch = config.batch_size / where.world_size;
  check_given_workloads(config, local_batch);
  auto workload_at = [&](int64_t index) {
    return config.given_workloads.empty() ? draw_comm_workload(workload, config.seed, index)
                                          : config.given_workloads[static_cast<std::size_t>(index)];
  };

  install_interrupt_handlers();
  std::optional<SignalsBlocked> blocked(std::in_place);
  Watchdog dog(where.rank, config.timeout_s + kCommWatchdogGraceSeconds);
  Job job = connect(config, backend, dog);
  const bool host_groups = std::any_of(config.given_workloads.begin(), config.given_workloads.end(),
                                       [](const CommWorkload& w) { return !w.host_rw_dims.empty(); });
  if (host_groups) connect_host_group(job, config, dog);
  std::vector<std::string> hosts;
  {
    Watched watched(dog, "exchanging host names");
    hosts = exchange_host_names(job);
  }
  blocked.reset();

  CollectSummary summary;
  std::optional<CostDataWriter> writer;
  int64_t current = -1;
  const char* phase = "agreeing on the settings";
  auto start_time = Clock::now();
  try {
    {
      Watched watched(dog, phase);
      summary.existing = agree_on_start(job, config, writer, backend, hosts);
    }
    if (summary.existing >= config.samples) {
      if (leader) {
        spdlog::info("{}: already holds {} samples (asked for {}); nothing to do", config.out_dir, summary.existing,
                     config.samples);
      }
    } else {
      if (leader && summary.existing > 0)
        spdlog::info("{}: resuming after {} samples", config.out_dir, summary.existing);
      spdlog::debug("rank {}: {} ranks connected ({}, batch {})", where.rank, where.world_size, backend,
                    config.batch_size);
      Buffers buffers(job.float_options);
      phase = "warm-up all-to-all";
      CommWorkload first = workload_at(summary.existing);
      for (int round = 0; round < config.warmup_rounds; ++round) {
        Watched watched(dog, phase);
        run_sample(job, buffers, first, local_batch, /*timed=*/false);
      }
      Progress progress("samples", config.samples, summary.existing, config.quiet || !leader);
      for (current = summary.existing; current < config.samples; ++current) {
        Watched watched(dog, fmt::format("sample {}", current));
        phase = "the stop check";
        if (agree_to_stop(job)) {
          summary.interrupted = true;
          break;
        }
        CommWorkload w = workload_at(current);
        phase = "the all-to-alls";
        Timing mine = run_sample_repeated(job, buffers, w, local_batch, config.repeats);
        phase = "gathering the timings";
        std::vector<Timing> all = gather_timings(job, mine);
        if (leader) {
          CommSample sample;
          sample.world_size = where.world_size;
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
          writer->append(comm_sample_to_json(sample));
          progress.update(current + 1,
                          fmt::format("median fw {:.2f} ms, bw {:.2f} ms", median(sample.fw_ms), median(sample.bw_ms)));
        }
        ++summary.written;
      }
      progress.finish();
      phase = "the final barrier";
      current = -1;
      Watched watched(dog, phase);
      // Nobody tears down its process group while a peer still talks to it.
      job.finish(job.group->barrier());
    }
  } catch (const std::exception& e) {
    // LibTorch's threads may stay blocked on a dead peer until the timeout; joining them would delay the
    // error. Leave them to the process exit instead.
    static_cast<void>(job.group.release());
    static_cast<void>(job.host_group.release());
    static_cast<void>(job.store.release());
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    std::string step = current >= 0 ? fmt::format("{} of sample {}", phase, current) : std::string(phase);
    throw RuntimeFailure(
        fmt::format("rank {}: {} failed (a peer died, hung or left; waits are bounded by --timeout "
                    "{} s): {}",
                    where.rank, step, config.timeout_s, message_of(e)));
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - start_time).count();
  Watched watched(dog, "shutting down the process group");
  writer.reset();
  job.group.reset();
  job.store.reset();
  return summary;
}

}  // namespace shardplan
