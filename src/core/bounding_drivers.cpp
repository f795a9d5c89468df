#include "shardplan/bounding_drivers.hpp"

#include <algorithm>
#include <unordered_map>

namespace shardplan {

namespace {

// One device's shards, tagged with the plan table each came from.
struct DeviceShard {
  std::size_t table;  // index into plan.tables
  ShardFeatures features;
};

// Predicted totals of every device, for compute sets and widths laid out as in score_plan.
std::vector<double> totals(const CostModel& model, const std::vector<double>& compute,
                           const std::vector<int64_t>& dim_sums) {
  std::vector<double> fw;
  std::vector<double> bw;
  model.predict_comm(dim_sums, compute, fw, bw);
  std::vector<double> out(compute.size());
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = compute[r] + fw[r] + bw[r];
  return out;
}

}  // namespace

std::optional<BoundingDevice> bounding_drivers(const Plan& plan, const std::vector<Table>& tables,
                                               const CostModel& model, int count) {
  const auto devices = static_cast<std::size_t>(plan.cluster.num_devices);
  if (devices == 0) return std::nullopt;
  std::unordered_map<std::string, const Table*> by_name;
  for (const auto& t : tables) by_name.emplace(t.name, &t);
  std::vector<std::vector<DeviceShard>> held(devices);
  std::vector<int64_t> dim_sums(devices, 0);
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const Table& table = *by_name.at(plan.tables[i].name);
    for (const auto& shard : plan.tables[i].shards) {
      auto r = static_cast<std::size_t>(shard.rank);
      held[r].push_back({i, shard_features(shard_as_table(table, shard), shard.cols)});
      dim_sums[r] += shard.cols;
    }
  }
  std::vector<std::vector<ShardFeatures>> sets(devices);
  for (std::size_t r = 0; r < devices; ++r) {
    for (const auto& s : held[r]) sets[r].push_back(s.features);
  }
  std::vector<double> compute = model.predict_compute(sets);
  std::vector<double> base = totals(model, compute, dim_sums);
  const auto rank = static_cast<std::size_t>(std::max_element(base.begin(), base.end()) - base.begin());

  // The device's tables in plan order, and its shard set without each of them.
  std::vector<std::size_t> on_rank;
  for (const auto& s : held[rank]) {
    if (std::find(on_rank.begin(), on_rank.end(), s.table) == on_rank.end()) on_rank.push_back(s.table);
  }
  std::vector<std::vector<ShardFeatures>> without(on_rank.size());
  std::vector<int64_t> width_without(on_rank.size(), dim_sums[rank]);
  for (std::size_t k = 0; k < on_rank.size(); ++k) {
    for (const auto& s : held[rank]) {
      if (s.table == on_rank[k]) {
        width_without[k] -= s.features.dim;
      } else {
        without[k].push_back(s.features);
      }
    }
  }
  std::vector<double> compute_without = model.predict_compute(without);

  BoundingDevice bound{static_cast<int>(rank), {}};
  for (std::size_t k = 0; k < on_rank.size(); ++k) {
    std::vector<double> c = compute;
    std::vector<int64_t> w = dim_sums;
    c[rank] = compute_without[k];
    w[rank] = width_without[k];
    const TableSharding& sharding = plan.tables[on_rank[k]];
    int64_t cols = dim_sums[rank] - width_without[k];
    bound.drivers.push_back(
        {sharding.name, cols, by_name.at(sharding.name)->pooling_factor, base[rank] - totals(model, c, w)[rank]});
  }
  std::stable_sort(bound.drivers.begin(), bound.drivers.end(),
                   [](const CostDriver& a, const CostDriver& b) { return a.saving_ms > b.saving_ms; });
  if (bound.drivers.size() > static_cast<std::size_t>(count)) bound.drivers.resize(static_cast<std::size_t>(count));
  return bound;
}

}  // namespace shardplan
