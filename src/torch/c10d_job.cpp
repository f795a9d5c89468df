#include "c10d_job.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstdlib>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#if defined(SHARDPLAN_WITH_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#if defined(SHARDPLAN_WITH_NCCL)
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "launch_store.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan::collector {

namespace {

#if defined(SHARDPLAN_WITH_GLOO)
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
#endif

std::chrono::milliseconds timeout_of(const CommCollectConfig& config) {
  return std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000.0));
}

// A process group of `size` ranks on `store`, this process being `rank`: NCCL on CUDA, else Gloo.
c10::intrusive_ptr<CollectiveGroup> process_group(const Job& job, const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size, const CommCollectConfig& config) {
  if (job.cuda) {
#if defined(SHARDPLAN_WITH_NCCL)
    // Blocking waits make wait() honour the timeout instead of hanging on a dead peer.
    ::setenv("NCCL_BLOCKING_WAIT", "1", 0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout_of(config);
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#endif
  }
#if defined(SHARDPLAN_WITH_GLOO)
  auto options = c10d::ProcessGroupGloo::Options::create(timeout_of(config));
  options->devices.push_back(gloo_device(config.rendezvous));
  options->threads = kGlooThreads;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#else
  (void)store, (void)rank, (void)size, (void)config;
  throw RuntimeFailure("this build has no Gloo collector");  // resolve_comm_backend refuses gloo first
#endif
}

// The tensors' device: the rank's GPU with NCCL, else the CPU.
at::Device job_device(const Job& job, const CommRendezvous& where) {
#if defined(SHARDPLAN_WITH_NCCL)
  if (job.cuda) {
    int count = static_cast<int>(c10::cuda::device_count());
    if (where.local_rank >= count) {
      throw InputError(fmt::format("rank {}: LOCAL_RANK {} but this host has {} CUDA device(s)", where.rank,
                                   where.local_rank, count));
    }
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(where.local_rank));
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(where.local_rank));
  }
#else
  (void)job, (void)where;
#endif
  return at::kCPU;
}

}  // namespace

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

bool gloo_compiled() {
#if defined(SHARDPLAN_WITH_GLOO)
  return true;
#else
  return false;
#endif
}

void Job::finish(const c10::intrusive_ptr<c10d::Work>& work) const {
  work->wait();
  if (cuda) torch::cuda::synchronize();
}

Job connect(const CommCollectConfig& config, const std::string& backend, Watchdog& dog) {
  const CommRendezvous& where = config.rendezvous;
  Job job;
  job.rank = where.rank;
  job.world = where.world_size;
  job.cuda = backend == "nccl";
  const at::Device device = job_device(job, where);
  job.float_options = at::TensorOptions().dtype(at::kFloat).device(device);
  job.long_options = at::TensorOptions().dtype(at::kLong).device(device);
  job.double_options = at::TensorOptions().dtype(at::kDouble).device(device);

  std::string endpoint = fmt::format("{}:{}", where.master_addr, launch_store_port(where));
  try {
    Watched watched(dog, fmt::format("the rendezvous at {}", endpoint));
    // The process group's own rendezvous waits for every rank (bounded by the timeout); the store does not
    // wait for the workers as well, which would double the time a missing rank takes to be reported.
    job.store = connect_launch_store(where, config.timeout_s);
    job.group = process_group(job, job.store, where.rank, where.world_size, config);
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format(
        "rank {}: rendezvous of {} ranks at {} ({}) failed within the timeout of {} s: {} (did every rank start, "
        "with the same WORLD_SIZE, MASTER_ADDR and MASTER_PORT?)",
        where.rank, where.world_size, endpoint,
        where.rank == 0 ? "this rank serves the store there" : "served by rank 0", config.timeout_s, message_of(e)));
  }
  return job;
}

void connect_host_group(Job& job, const CommCollectConfig& config, Watchdog& dog) {
  const int per_host = config.gpus_per_host;
  const int host = job.rank / per_host;
  Watched watched(dog, fmt::format("the rendezvous of host {}'s {} ranks", host, per_host));
  auto store = c10::make_intrusive<c10d::PrefixStore>(fmt::format("host{}/", host), job.store);
  try {
    job.host_group = process_group(job, store, job.rank % per_host, per_host, config);
  } catch (const std::exception& e) {
    throw RuntimeFailure(
        fmt::format("rank {}: the rendezvous of host {}'s {} ranks failed within the timeout of {} s: {}", job.rank,
                    host, per_host, config.timeout_s, message_of(e)));
  }
  job.host_size = per_host;
}

}  // namespace shardplan::collector
