#include <algorithm>
#include <unordered_map>

#include "shardplan/cost_model.hpp"

namespace shardplan {

ShardFeatures shard_features(const Table& table, int64_t cols) {
  return ShardFeatures{table.rows, static_cast<int>(cols), table.pooling_factor, table.reuse_hist_or_default()};
}

std::vector<double> CostModel::predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const {
  std::vector<double> out(sets.size(), 0.0);
  const auto width = static_cast<std::size_t>(summary_size());
  std::vector<float> sum(width);
  std::vector<float> summary(width);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    if (sets[s].empty()) continue;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (const auto& shard : sets[s]) {
      shard_summary(shard, summary.data());
      for (std::size_t i = 0; i < width; ++i) sum[i] += summary[i];
    }
    out[s] = compute_from_summary(sum.data());
  }
  return out;
}

std::vector<DeviceCost> score_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  std::unordered_map<std::string, const Table*> by_name;
  for (const auto& t : tables) by_name.emplace(t.name, &t);
  const auto devices = static_cast<std::size_t>(plan.cluster.num_devices);
  std::vector<std::vector<ShardFeatures>> sets(devices);
  std::vector<int64_t> dim_sums(devices, 0);
  for (const auto& sharding : plan.tables) {
    const Table& table = *by_name.at(sharding.name);
    for (const auto& shard : sharding.shards) {
      sets[static_cast<std::size_t>(shard.rank)].push_back(shard_features(shard_as_table(table, shard), shard.cols));
      dim_sums[static_cast<std::size_t>(shard.rank)] += shard.cols;
    }
  }
  std::vector<double> compute = model.predict_compute(sets);
  std::vector<double> fw;
  std::vector<double> bw;
  model.predict_comm(dim_sums, compute, fw, bw);
  std::vector<DeviceCost> costs(devices);
  for (std::size_t r = 0; r < devices; ++r) costs[r] = DeviceCost{compute[r], fw[r], bw[r]};
  return costs;
}

}  // namespace shardplan
