#pragma once
// The collector's connection: this rank's c10d store and process groups (Gloo on CPU tensors; NCCL on
// CUDA tensors when this LibTorch has them), joined through a rendezvous at rank 0's TCP store.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "shardplan/torch/comm_benchmark.hpp"
#include "watchdog.hpp"

// LibTorch 2 made the process groups backends behind a dispatching ProcessGroup; the collectives the
// collector calls are the backends' own, so it holds the backend directly (1.13's groups were ProcessGroups).
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
namespace shardplan::collector {
using CollectiveGroup = c10d::Backend;
}
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
namespace shardplan::collector {
using CollectiveGroup = c10d::ProcessGroup;
}
#endif

namespace shardplan::collector {

inline constexpr int kGlooThreads = 2;  // c10d's default worker threads per Gloo process group

// LibTorch's errors carry a C++ backtrace in what(); users need the message only.
std::string message_of(const std::exception& e);

// Whether this build has c10d's NCCL backend (SHARDPLAN_WITH_NCCL) and its Gloo backend (SHARDPLAN_WITH_GLOO):
// each is built where its headers were found (cmake/Collectors.cmake).
bool nccl_compiled();
bool gloo_compiled();

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
  void finish(const c10::intrusive_ptr<c10d::Work>& work) const;
};

// Joins the rendezvous of config.rendezvous and starts the world's process group on `backend` ("gloo" or
// "nccl"), watched by `dog`. Throws InputError for a missing CUDA device, RuntimeFailure when the
// rendezvous fails within the timeout.
Job connect(const CommCollectConfig& config, const std::string& backend, Watchdog& dog);

// The group of this rank's host (ranks h*K ... h*K+K-1, K = config.gpus_per_host), on the same store under
// the host's prefix: table-row-wise tables reduce-scatter and all-gather within it, as TorchRec's
// intra-host group does.
void connect_host_group(Job& job, const CommCollectConfig& config, Watchdog& dog);

}  // namespace shardplan::collector
