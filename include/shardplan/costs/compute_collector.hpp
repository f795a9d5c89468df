#pragma once
// `collect-costs compute`: random shard sets drawn from a table pool augmented to every width
// 4, 8, ..., 128 (method.md), each timed with the compute benchmark and appended to a cost-data
// directory. Sample i depends only on (seed, i), so an interrupted collection resumes to the same data.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/measure.hpp"

namespace shardplan {

struct ComputeCollectConfig {
  std::string pool_path;  // recorded in the metadata
  std::string out_dir;
  int64_t samples = 0;                     // the directory's target sample count (resumes up to it)
  int max_tables = 16;                     // shards per sample: 1 to this many (plans hold ~7-15 per device)
  int64_t memory_cap_bytes = 512ll << 20;  // weights of one sample's shards at most this
  uint64_t seed = 0;
  ComputeBenchConfig bench;
  bool quiet = false;
  std::string command_line;   // recorded in the metadata
  std::string torch_version;  // recorded in the metadata: the LibTorch that times (compute_benchmark.hpp)
};

// A compute collection's meta.json (cost_data.hpp): `settings` (what a sample means, compared on resume)
// gain the benchmark's settings, and the provenance of this machine is added. Call after
// prepare_memory_for_timing, whose policy it records.
nlohmann::json compute_collection_meta(nlohmann::json settings, const ComputeBenchConfig& bench, uint64_t seed,
                                       const std::string& command_line, const std::string& torch_version);

// The shards of sample `index`: pool tables at random widths, within the memory cap. Throws
// SettingError("memory cap") when the cap holds no pool table at all.
std::vector<Table> draw_compute_sample(const std::vector<Table>& pool, int max_tables, int64_t memory_cap_bytes,
                                       uint64_t seed, int64_t index);

// Each sample timed by `timer`, which times as config.bench says (compute_timer(config.bench)).
CollectSummary collect_compute_costs(const std::vector<Table>& pool, const ComputeCollectConfig& config,
                                     const ComputeTimer& timer);

}  // namespace shardplan
