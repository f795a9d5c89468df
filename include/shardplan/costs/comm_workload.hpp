#pragma once
// The random workload of one all-to-all sample ("comm-workload/1"): each rank's pooled-embedding width
// sum and its start delay. Every rank draws the same sample from (seed, index), so ranks agree without
// exchanging it, and a resumed collection continues the sequence an uninterrupted one would have drawn.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardplan {

inline constexpr const char* kCommWorkloadScheme = "comm-workload/1";

struct CommWorkloadConfig {
  int world_size = 2;
  double max_delay_ms = 5.0;         // each rank's start delay is at most this
  double zero_delay_fraction = 0.2;  // samples where no rank is delayed (pure communication)
  int max_mean_shards = 16;          // a sample's mean shards per rank is 1 to this
  int max_skew = 4;                  // at full imbalance, a rank's shard count is mean/4 .. mean*4
};

struct CommWorkload {
  std::vector<int64_t> dim_sums;  // per rank: sum of its shards' widths (each 4, 8, ..., 128)
  std::vector<int> shard_counts;  // per rank: how many shards make up that sum
  std::vector<double> delays_ms;  // per rank: start delay standing in for unequal compute
  double imbalance = 0.0;         // the sample's imbalance level in [0, 1]
  // Given workloads only (a plan's collectives, as TorchRec runs them): the summed width of its row-wise
  // tables, whose pooled partial sums every rank reduce-scatters in the forward and all-gathers back in
  // the backward (on top of the all-to-all of dim_sums); and the floats of its data-parallel gradients,
  // all-reduced after the backward. 0: none.
  int64_t rw_dim = 0;
  int64_t allreduce_floats = 0;
  // Per rank, its host's table-row-wise tables' summed width (the same on every rank of a host): each
  // host's ranks reduce-scatter world x local_batch x that many floats among themselves in the forward
  // and all-gather them back in the backward (hosts of --gpus-per-host ranks). Empty: none.
  std::vector<int64_t> host_rw_dims;
};

// Sample `index` of the sequence `seed`. Uses only integer and exactly rounded arithmetic on
// std::mt19937_64 output (no std:: distributions, no libm), so it is identical on every platform.
CommWorkload draw_comm_workload(const CommWorkloadConfig& config, uint64_t seed, int64_t index);

// The largest width sum any rank can draw: sizes the communication buffers.
int64_t max_comm_dim_sum(const CommWorkloadConfig& config);

// Throws SettingError naming the setting ("world size", "maximum delay") when one is out of range.
void validate_comm_workload(const CommWorkloadConfig& config);

// Given workloads, timed by `collect-costs comm --workloads FILE` instead of drawn ones: the all-to-alls of
// particular plans (`bench --measure-comm` writes one per plan, delays = the plan's compute skew).
// {"format": "shard-plan-comm-workloads/1", "world_size": W,
//  "workloads": [{"dim_sums": [W integers], "delays_ms": [W numbers],
//                 "rw_dim": integer, "allreduce_floats": integer, "host_rw_dims": [W integers]}, ...]}
//  (the last three optional: 0, 0 and none)
inline constexpr const char* kCommWorkloadsFormat = "shard-plan-comm-workloads/1";
inline constexpr int64_t kMaxGivenDimSum = 1 << 20;                    // a rank's output width
inline constexpr double kMaxGivenDelayMs = 60'000.0;                   // a rank's start delay
inline constexpr int64_t kMaxGivenAllreduceFloats = int64_t{1} << 31;  // 8 GiB of fp32 gradients
// The buffers a rank holds to time given workloads, at most (each buffer keeps its largest size).
inline constexpr double kMaxGivenBufferBytes = 8.0 * (1ull << 30);

nlohmann::json comm_workloads_to_json(int world_size, const std::vector<CommWorkload>& workloads);
// Throws InputError naming `source` and the field (`workloads[3].dim_sums[1]`) and the value.
std::vector<CommWorkload> comm_workloads_from_json(const nlohmann::json& doc, const std::string& source,
                                                   int& world_size);
// Reads a workloads file; its world size must be `world_size` (InputError naming the file otherwise).
std::vector<CommWorkload> read_comm_workloads(const std::string& path, int world_size);
// Written atomically.
void write_comm_workloads(const std::string& path, int world_size, const std::vector<CommWorkload>& workloads);
// Given workloads must fit a collection of `world_size` ranks at the global batch `batch_size`, hosts of
// `gpus_per_host` ranks (0: one host): every rank listed, a host's table-row-wise widths alike on its ranks,
// and the buffers a rank holds for them within kMaxGivenBufferBytes. Throws InputError naming `source`,
// the workload and the field, or SettingError("GPUs per host") when the hosts cannot hold table-row-wise
// tables. Plain arithmetic: the collector checks the list with it before any rank connects.
void check_given_comm_workloads(const std::vector<CommWorkload>& given, const std::string& source, int world_size,
                                int gpus_per_host, int64_t batch_size);
// A digest of the widths, delays and other collectives, so ranks (and a resumed directory) can check they time the same
// list.
uint64_t comm_workloads_digest(const std::vector<CommWorkload>& workloads);

}  // namespace shardplan
