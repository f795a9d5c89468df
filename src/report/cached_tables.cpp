#include "shardplan/report/cached_tables.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "shardplan/cost_model/uvm_cache_cost.hpp"

namespace shardplan {

std::vector<CachedTableReport> describe_cached_tables(const Plan& plan, const std::vector<Table>& tables,
                                                      const CostModel& model) {
  std::vector<CachedTableReport> out;
  std::unordered_map<std::string, const Table*> by_name;
  for (const auto& table : tables) by_name.emplace(table.name, &table);
  const int64_t batch = cost_model_batch(model);
  for (const auto& sharding : plan.tables) {
    if (!sharding.cache || sharding.shards.empty()) continue;
    const auto found = by_name.find(sharding.name);
    if (found == by_name.end()) continue;
    const Shard& largest = *std::max_element(sharding.shards.begin(), sharding.shards.end(),
                                             [](const Shard& a, const Shard& b) { return a.rows < b.rows; });
    const Table piece = shard_as_table(*found->second, largest);
    const UvmCacheCost cost = uvm_cache_cost(piece, sharding.cache->load_factor, batch, plan.cluster);
    const CacheMissEstimate& m = cost.misses;
    const double lookups = std::round(static_cast<double>(batch) * piece.pooling_factor);
    const double conflict_reads = m.distinct > 0 ? m.conflict_unique * lookups / m.distinct : 0.0;
    CachedTableReport report;
    report.name = sharding.name;
    report.load_factor = sharding.cache->load_factor;
    report.miss_rate = m.miss_rate_unique;
    report.rows_fetched = std::max(0.0, m.unique_misses - m.conflict_unique) + conflict_reads;
    report.link_bytes = report.rows_fetched * piece.dim * dtype_bytes(piece.dtype);
    report.cache_ms = cost.total_ms();
    report.batch = batch;
    out.push_back(report);
  }
  return out;
}

}  // namespace shardplan
