#pragma once
// Measured cost data ("shard-plan-costs/1"): a directory holding meta.json (what was measured, where,
// how) and samples.jsonl (one complete JSON sample per line). Both collectors and the trainer use it.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

inline constexpr const char* kCostDataFormat = "shard-plan-costs/1";
inline constexpr const char* kCostMetaFile = "meta.json";
inline constexpr const char* kCostSamplesFile = "samples.jsonl";

enum class CostKind { kCompute, kComm };

// One shard of a compute sample: the features the cost model sees.
struct ShardFeatures {
  int64_t rows = 0;
  int dim = 0;
  double pooling_factor = 0.0;
  ReuseHist reuse_hist{};
};

// The fused embedding stage of one device: its shards and the measured step latency.
struct ComputeSample {
  std::vector<ShardFeatures> shards;
  double latency_ms = 0.0;            // median of the timed iterations
  std::vector<double> iterations_ms;  // every timed iteration, for noise analysis
};

// The fastest timed iteration (the median when none were recorded): other work on the machine only
// ever adds time, so the minimum is the measurement least disturbed by it. Models train on this.
double undisturbed_latency_ms(const ComputeSample& sample);
// The set's typical step, noise included: the median timed iteration (latency_ms). A calibration fits this,
// since its model should predict the steps a job on this machine takes, and shardplan.measure reports
// medians; on a busy 2-core VM the fastest of 5 steps ran 7% below their median.
double typical_latency_ms(const ComputeSample& sample);
// The same statistic for any timed steps: the fastest, or `fallback_ms` when there are none.
double fastest_ms(const std::vector<double>& iterations_ms, double fallback_ms);

// One all-to-all measurement across `world_size` ranks.
struct CommSample {
  int world_size = 0;
  std::vector<int64_t> dim_sums;  // per rank: pooled output width sent to every other rank
  std::vector<double> delays_ms;  // per rank: start delay standing in for unequal compute
  std::vector<double> fw_ms;      // per rank: forward all-to-all latency (from its own start)
  std::vector<double> bw_ms;      // per rank: backward all-to-all latency
  // Ranks per host when the ranks ran on several (emulated) hosts, rank r on host r / devices_per_host;
  // 0: all on one host ("gpus_per_host" in the file, absent for one host).
  int devices_per_host = 0;
  // A plan's other collectives, when the sample timed them (given workloads; absent from drawn samples):
  // row-wise tables' summed width (a reduce-scatter inside fw_ms, an all-gather inside bw_ms), and the
  // data-parallel gradients' floats, all-reduced after the backward in allreduce_ms per rank.
  int64_t rw_dim = 0;
  int64_t allreduce_floats = 0;
  std::vector<double> allreduce_ms;  // per rank; empty when allreduce_floats is 0
  // Per rank, its host's table-row-wise width, reduce-scattered among the host's ranks inside fw_ms and
  // all-gathered inside bw_ms; empty: none (CommWorkload::host_rw_dims).
  std::vector<int64_t> host_rw_dims;
};

// Each rank's pooled output width as the cost model sees it: its all-to-all width plus the row-wise
// width, which every rank sends in the reduce-scatter (the same bytes as an all-to-all of that width),
// and its host's table-row-wise width, which it sends likewise within the host.
std::vector<int64_t> model_dim_sums(const CommSample& sample);

nlohmann::json compute_sample_to_json(const ComputeSample& sample);
nlohmann::json comm_sample_to_json(const CommSample& sample);
// Throw InputError naming `source` (file:line) and the field.
ComputeSample compute_sample_from_json(const nlohmann::json& doc, const std::string& source);
CommSample comm_sample_from_json(const nlohmann::json& doc, const std::string& source);

// A directory of samples being written. Opening an existing directory resumes it: its meta.json must
// describe the same kind of collection (`meta["kind"]`, `meta["config"]`), a torn last line left by an
// interrupted run is cut off, and `existing_samples()` says how many complete samples are there.
class CostDataWriter {
 public:
  // `meta` holds "kind", "config" (settings that must match to append) and provenance fields. Throws
  // SettingError("cost-data directory") when `dir` holds a different collection.
  CostDataWriter(const std::string& dir, const nlohmann::json& meta);
  ~CostDataWriter();
  CostDataWriter(const CostDataWriter&) = delete;
  CostDataWriter& operator=(const CostDataWriter&) = delete;

  int64_t existing_samples() const { return existing_; }
  // Appends one complete line with a single write; flushed to disk every few samples and on close.
  void append(const nlohmann::json& sample);

 private:
  std::string path_;
  int fd_ = -1;
  int64_t existing_ = 0;
  int64_t unsynced_ = 0;
};

// What a collection run did (both collectors).
struct CollectSummary {
  int64_t existing = 0;  // complete samples found when the run started
  int64_t written = 0;   // samples this run added
  bool interrupted = false;
  double seconds = 0.0;
};

struct CostData {
  nlohmann::json meta;
  std::vector<ComputeSample> compute;  // when meta.kind == "compute"
  std::vector<CommSample> comm;        // when meta.kind == "comm"
};

// Reads a cost-data directory, or every such directory below `dir` of the wanted kind (so a trainer can
// be pointed at data/costs/<device>/); nullopt when there is none of that kind. Throws InputError on
// malformed files, naming file and line.
std::optional<CostData> find_cost_data(const std::string& dir, CostKind kind);
// The same, but no data of the kind is an InputError too.
CostData load_cost_data(const std::string& dir, CostKind kind);

std::string cost_kind_name(CostKind kind);

}  // namespace shardplan
