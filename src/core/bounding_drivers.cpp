#include "shardplan/bounding_drivers.hpp"

#include <algorithm>

namespace shardplan {

namespace {

double total_on(const CostModel& model, const std::vector<double>& compute, const std::vector<int64_t>& dim_sums,
                double collectives_ms, std::size_t rank) {
  return costs_from_compute(model, compute, dim_sums, collectives_ms)[rank].total_ms();
}

}  // namespace

std::optional<BoundingDevice> bounding_drivers(const Plan& plan, const std::vector<Table>& tables,
                                               const CostModel& model, int count) {
  std::vector<DeviceShards> devices = device_shards(plan, tables);
  if (devices.empty()) return std::nullopt;
  std::vector<int64_t> dim_sums;
  for (const auto& device : devices) dim_sums.push_back(device.dim_sum);
  // The plan's own scores when this model made them (the planner scores every plan); else score it.
  const bool scored = plan.device_costs && plan.device_costs->size() == devices.size() && plan.cost_model == model.name();
  const double collectives = plan_collectives_ms(model, devices);
  std::vector<DeviceCost> base = scored ? *plan.device_costs
                                        : costs_from_compute(model, model.predict_compute(compute_sets(devices)),
                                                             dim_sums, collectives);
  std::vector<double> compute;
  for (const auto& cost : base) compute.push_back(cost.compute_ms);
  const auto rank = static_cast<std::size_t>(
      std::max_element(base.begin(), base.end(), [](const DeviceCost& a, const DeviceCost& b) {
        return a.total_ms() < b.total_ms();
      }) - base.begin());
  const DeviceShards& held = devices[rank];
  const std::vector<ShardFeatures> held_set = compute_sets({held}).front();

  // The device's tables in plan order, and its shard set and width without each of them.
  std::vector<std::size_t> on_rank;
  for (std::size_t t : held.plan_tables) {
    if (std::find(on_rank.begin(), on_rank.end(), t) == on_rank.end()) on_rank.push_back(t);
  }
  std::vector<std::vector<ShardFeatures>> without(on_rank.size());
  std::vector<int64_t> width_without(on_rank.size(), held.dim_sum);
  for (std::size_t k = 0; k < on_rank.size(); ++k) {
    for (std::size_t i = 0; i < held.pieces.size(); ++i) {
      if (held.plan_tables[i] == on_rank[k]) {
        // A replica sends nothing in the all-to-all (its gradients' all-reduce stays: every rank has one).
        if (plan.tables[on_rank[k]].type != ShardingType::kDataParallel) width_without[k] -= held.pieces[i].dim;
      } else {
        without[k].push_back(held_set[i]);
      }
    }
  }
  std::vector<double> compute_without = model.predict_compute(without);

  BoundingDevice bound{static_cast<int>(rank), {}};
  for (std::size_t k = 0; k < on_rank.size(); ++k) {
    compute[rank] = compute_without[k];
    dim_sums[rank] = width_without[k];
    const double total_without = total_on(model, compute, dim_sums, collectives, rank);
    const std::string& name = plan.tables[on_rank[k]].name;
    const Table& table = *std::find_if(tables.begin(), tables.end(), [&](const Table& t) { return t.name == name; });
    bound.drivers.push_back({name, held.dim_sum - width_without[k], table.pooling_factor,
                             base[rank].total_ms() - total_without});
  }
  std::stable_sort(bound.drivers.begin(), bound.drivers.end(),
                   [](const CostDriver& a, const CostDriver& b) { return a.saving_ms > b.saving_ms; });
  if (bound.drivers.size() > static_cast<std::size_t>(count)) bound.drivers.resize(static_cast<std::size_t>(count));
  return bound;
}

}  // namespace shardplan
