#include "shardplan/report/cached_tables.hpp"

#include <algorithm>
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
    CachedTableReport report;
    report.name = sharding.name;
    report.load_factor = sharding.cache->load_factor;
    report.miss_rate = cost.misses.miss_rate_unique;
    report.rows_fetched = cost.rows_read;
    report.link_bytes = cost.rows_read * cost.row_bytes;
    report.cache_ms = cost.total_ms();
    report.batch = batch;
    out.push_back(report);
  }
  return out;
}

}  // namespace shardplan
