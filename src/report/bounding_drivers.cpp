#include "shardplan/report/bounding_drivers.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "shardplan/cost_model/uvm_cache_cost.hpp"

namespace shardplan {

namespace {

double total_on(const CostModel& model, const std::vector<double>& compute, const std::vector<int64_t>& dim_sums,
                const std::vector<double>& input_ids, double collectives_ms, const std::vector<double>& cache_ms,
                std::size_t rank) {
  return costs_from_compute(model, compute, dim_sums, input_ids, collectives_ms, cache_or_none(cache_ms))[rank]
      .total_ms();
}

// Each shard's summary, once: a device with thousands of tables is scored without each in turn.
std::vector<float> shard_summaries(const CostModel& model, const std::vector<ShardFeatures>& shards) {
  const auto width = static_cast<std::size_t>(model.summary_size());
  std::vector<float> summaries(shards.size() * width);
  for (std::size_t i = 0; i < shards.size(); ++i) model.shard_summary(shards[i], summaries.data() + i * width);
  return summaries;
}

// The device's compute without plan table `left_out`: its other shards' summaries summed in order, as
// CostModel::predict_compute sums them, so the result is the same bit for bit.
double compute_without(const CostModel& model, const std::vector<float>& summaries,
                       const std::vector<std::size_t>& plan_tables, std::size_t left_out) {
  const auto width = static_cast<std::size_t>(model.summary_size());
  thread_local std::vector<float> sum;
  sum.assign(width, 0.0f);
  bool any = false;
  for (std::size_t i = 0; i < plan_tables.size(); ++i) {
    if (plan_tables[i] == left_out) continue;
    const float* summary = summaries.data() + i * width;
    for (std::size_t k = 0; k < width; ++k) sum[k] += summary[k];
    any = true;
  }
  return any ? model.compute_from_summary(sum.data()) : 0.0;  // an empty set costs 0
}

// What plan table t's cached pieces on `device` add to its total (0 when t is not cached).
double cached_piece_ms(const DeviceShards& device, std::size_t t, const Cluster& cluster, const CostModel& model) {
  double ms = 0.0;
  for (std::size_t i = 0; i < device.pieces.size(); ++i) {
    if (device.plan_tables[i] == t && device.load_factors[i] > 0.0)
      ms += uvm_cache_cost(device.pieces[i], device.load_factors[i], cost_model_batch(model), cluster).total_ms();
  }
  return ms;
}

}  // namespace

std::optional<BoundingDevice> bounding_drivers(const Plan& plan, const std::vector<Table>& tables,
                                               const CostModel& model, int count) {
  std::vector<DeviceShards> devices = device_shards(plan, tables);
  if (devices.empty()) return std::nullopt;
  std::vector<int64_t> dim_sums;
  std::vector<double> input_ids;
  for (const auto& device : devices) {
    dim_sums.push_back(device.dim_sum);
    input_ids.push_back(device.input_ids);
  }
  // The plan's own scores when this model made them (the planner scores every plan); else score it.
  const bool scored =
      plan.device_costs && plan.device_costs->size() == devices.size() && plan.cost_model == model.name();
  const double collectives = plan_collectives_ms(model, devices);
  const std::vector<double> cache = plan_cache_ms(plan, devices, model);
  std::vector<DeviceCost> base =
      scored ? *plan.device_costs
             : plan_costs_from_compute(model, plan, devices, model.predict_compute(compute_sets(devices)));
  std::vector<double> compute;
  for (const auto& cost : base) compute.push_back(cost.compute_ms);
  const auto rank = static_cast<std::size_t>(
      std::max_element(base.begin(), base.end(),
                       [](const DeviceCost& a, const DeviceCost& b) { return a.total_ms() < b.total_ms(); }) -
      base.begin());
  const DeviceShards& held = devices[rank];
  const std::vector<ShardFeatures> held_set = compute_sets({held}).front();

  // The device's tables in plan order.
  std::vector<std::size_t> on_rank;
  std::vector<char> listed(plan.tables.size(), 0);
  for (std::size_t t : held.plan_tables) {
    if (!listed[t]) on_rank.push_back(t);
    listed[t] = 1;
  }
  const std::vector<float> summaries = shard_summaries(model, held_set);
  std::unordered_map<std::string_view, double> pooling;
  for (const Table& table : tables) pooling.emplace(table.name, table.pooling_factor);

  BoundingDevice bound{static_cast<int>(rank), {}};
  std::vector<double> cache_without = cache;
  for (std::size_t t : on_rank) {
    int64_t width_without = held.dim_sum;
    double ids_without = held.input_ids;
    if (!cache.empty()) cache_without[rank] = cache[rank] - cached_piece_ms(held, t, plan.cluster, model);
    for (std::size_t i = 0; i < held.pieces.size(); ++i) {
      // A replica sends nothing in the all-to-alls (its gradients' all-reduce stays: every rank has one).
      if (held.plan_tables[i] == t && plan.tables[t].type != ShardingType::kDataParallel) {
        width_without -= held.pieces[i].dim;
        ids_without -= input_ids_per_sample(held.pieces[i]);
      }
    }
    compute[rank] = compute_without(model, summaries, held.plan_tables, t);
    dim_sums[rank] = width_without;
    input_ids[rank] = ids_without;
    const double total_without = total_on(model, compute, dim_sums, input_ids, collectives, cache_without, rank);
    const std::string& name = plan.tables[t].name;
    bound.drivers.push_back(
        {name, held.dim_sum - width_without, pooling.at(name), base[rank].total_ms() - total_without});
  }
  std::stable_sort(bound.drivers.begin(), bound.drivers.end(),
                   [](const CostDriver& a, const CostDriver& b) { return a.saving_ms > b.saving_ms; });
  if (bound.drivers.size() > static_cast<std::size_t>(count)) bound.drivers.resize(static_cast<std::size_t>(count));
  return bound;
}

}  // namespace shardplan
