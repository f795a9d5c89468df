#pragma once
// `collect-costs comm`: times the forward all-to-all of pooled embeddings and the backward all-to-all of
// their gradients across W ranks with LibTorch's c10d (Gloo on CPU, NCCL on CUDA), one process per rank.
// Rank 0 writes the samples (cost-data format, kind "comm"). No LibTorch types here.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/comm_workload.hpp"

namespace shardplan {

// Where this process sits in the job: from torchrun-style environment variables or from --spawn.
struct CommRendezvous {
  int rank = 0;
  int world_size = 0;
  int local_rank = 0;       // the GPU to use on its host (NCCL); LOCAL_RANK, else rank
  std::string master_addr;  // host of rank 0, which serves the TCP store
  int master_port = 0;
  // torchrun's agent serves master_port (TORCHELASTIC_USE_AGENT_STORE): rank 0 serves the next port.
  bool launcher_serves_store = false;
};

struct CommCollectConfig {
  CommRendezvous rendezvous;
  std::string out_dir;
  int64_t samples = 0;  // the directory's target sample count (resumes up to it)
  uint64_t seed = 1;
  int64_t batch_size = 4096;     // global batch B; each rank owns B / W samples
  std::string backend = "auto";  // gloo, nccl, or auto (nccl when LibTorch has CUDA and NCCL)
  double timeout_s = 60.0;       // bound on every wait for a peer (rendezvous, collectives)
  CommWorkloadConfig workload;
  // Given workloads: sample i times given_workloads[i] (the list's world size is the collection's) instead of
  // drawing one; `samples` must not exceed the list.
  std::vector<CommWorkload> given_workloads;
  std::string workloads_path;  // recorded in the metadata
  int warmup_rounds = 3;       // untimed all-to-alls before the first sample (connections, buffers)
  int repeats = 5;             // timed runs of each sample; each rank records its medians (scheduling noise)
  // Ranks per host when the ranks run on several (emulated) hosts, rank r on host r / gpus_per_host;
  // recorded in the config and in every sample. 0: one host.
  int gpus_per_host = 0;
  bool quiet = false;
  std::string command_line;  // recorded in the metadata
};

// The longest wait for a peer a collection may be given.
inline constexpr double kCommTimeoutLimitSeconds = 86'400.0;

// How every sample is timed, whatever the world: `repeats` runs, waits bounded by `timeout_s`, at a global
// batch. Throws SettingError ("repeats", "timeout", "batch size").
void validate_comm_timing(int repeats, double timeout_s, int64_t batch_size);

// The collection's settings, checked before any rank connects (the CLI checks them before it starts the
// ranks, and every rank again): samples, repeats, timeout, batch (a multiple of the world size), backend,
// GPUs per host, the drawn workloads' settings, the rank, and the given workloads against them
// (check_given_comm_workloads). Throws SettingError naming the setting, or InputError naming the
// workloads file and field.
void validate_comm_collection(const CommCollectConfig& config);

// Runs this process's rank of the collection. Every rank must get the same settings (rank 0 checks and
// names a mismatch). Throws validate_comm_collection's errors for bad settings, RuntimeFailure when a peer dies, hangs
// or never arrives; a rank stuck longer than `timeout_s` + kCommWatchdogGraceSeconds is ended with exit status 1.
CollectSummary run_comm_collection(const CommCollectConfig& config);

// "gloo" or "nccl" for `requested` (gloo, nccl, auto) on this build; SettingError("backend") otherwise.
std::string resolve_comm_backend(const std::string& requested);

// The collector's backends this build has ("gloo", "nccl"): each is built where its headers were found.
std::vector<std::string> compiled_comm_backends();

// How errors name the given workloads: their file, or "the given workloads".
std::string given_workloads_source(const CommCollectConfig& config);

// Extra time past the timeout after which a rank blocked in LibTorch is aborted regardless.
inline constexpr double kCommWatchdogGraceSeconds = 10.0;

}  // namespace shardplan
