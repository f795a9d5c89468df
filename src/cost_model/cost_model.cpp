#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/cost_model/uvm_cache_cost.hpp"

namespace shardplan {

ShardFeatures shard_features(const Table& table, int64_t cols) {
  return ShardFeatures{table.rows, static_cast<int>(cols), table.pooling_factor, table.reuse_hist_or_default()};
}

std::vector<double> CostModel::predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const {
  std::vector<double> out(sets.size(), 0.0);
  const auto width = static_cast<std::size_t>(summary_size());
  std::vector<float> sum(width);
  // Row-wise blocks and replicas put the same piece on many devices: each distinct one is summarised once.
  std::map<std::tuple<int64_t, int, double, ReuseHist>, std::vector<float>> summaries;
  for (std::size_t s = 0; s < sets.size(); ++s) {
    if (sets[s].empty()) continue;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (const auto& shard : sets[s]) {
      auto [at, fresh] =
          summaries.try_emplace(std::make_tuple(shard.rows, shard.dim, shard.pooling_factor, shard.reuse_hist));
      if (fresh) {
        at->second.resize(width);
        shard_summary(shard, at->second.data());
      }
      for (std::size_t i = 0; i < width; ++i) sum[i] += at->second[i];
    }
    out[s] = compute_from_summary(sum.data());
  }
  return out;
}

double CostModel::allreduce_ms(double bytes, int num_devices) const {
  return nominal_allreduce_ms(bytes, num_devices, AnalyticCostConfig{}.devices_per_host);
}

CommFabric CostModel::nominal_fabric(int devices_per_host) {
  const AnalyticCostConfig nominal;
  CommFabric fabric;
  fabric.devices_per_host = devices_per_host;
  fabric.intra_bytes_per_ms = nominal.intra_host_bytes_per_ms;
  fabric.inter_bytes_per_ms = nominal.inter_host_bytes_per_ms;
  return fabric;
}

double CostModel::nominal_allreduce_ms(double bytes, int num_devices, int devices_per_host) {
  return ring_allreduce_ms(nominal_fabric(devices_per_host), bytes, num_devices);
}

std::vector<std::vector<ShardFeatures>> compute_sets(const std::vector<DeviceShards>& devices) {
  std::vector<std::vector<ShardFeatures>> sets(devices.size());
  for (std::size_t r = 0; r < devices.size(); ++r) {
    for (const auto& piece : devices[r].pieces) sets[r].push_back(shard_features(piece, piece.dim));
  }
  return sets;
}

std::vector<DeviceCost> costs_from_compute(const CostModel& model, const std::vector<double>& compute_ms,
                                           const std::vector<int64_t>& dim_sums, const std::vector<double>& input_ids,
                                           double collectives_ms, const std::vector<double>* cache_ms) {
  std::vector<double> fw;
  std::vector<double> bw;
  std::vector<double> input;
  model.predict_comm(dim_sums, compute_ms, fw, bw);
  model.predict_input_dist(input_ids, input);
  std::vector<DeviceCost> costs(compute_ms.size());
  for (std::size_t r = 0; r < costs.size(); ++r) {
    costs[r] = DeviceCost{compute_ms[r], fw[r] + input[r], bw[r] + collectives_ms, cache_ms ? (*cache_ms)[r] : 0.0};
  }
  return costs;
}

double max_total_from_compute(const CostModel& model, const std::vector<double>& compute_ms,
                              const std::vector<int64_t>& dim_sums, const std::vector<double>& input_ids,
                              double collectives_ms, const std::vector<double>* cache_ms) {
  thread_local std::vector<double> fw;
  thread_local std::vector<double> bw;
  thread_local std::vector<double> input;
  model.predict_comm(dim_sums, compute_ms, fw, bw);
  model.predict_input_dist(input_ids, input);
  double worst = 0.0;
  for (std::size_t r = 0; r < compute_ms.size(); ++r) {
    const double cache = cache_ms ? (*cache_ms)[r] : 0.0;
    worst = std::max(worst, DeviceCost{compute_ms[r], fw[r] + input[r], bw[r] + collectives_ms, cache}.total_ms());
  }
  return worst;
}

double CostModel::rowwise_collectives_ms(int64_t /*rw_dim*/, int num_devices) const {
  return num_devices < 2 ? 0.0 : allreduce_ms(kLatencyProbeBytes, num_devices);
}

double extra_collectives_ms(const CostModel& model, int64_t allreduce_bytes, int64_t row_wise_dim, int num_devices,
                            int64_t host_row_wise_dim, int devices_per_host) {
  if (num_devices < 2) return 0.0;
  double ms = allreduce_bytes > 0 ? model.allreduce_ms(static_cast<double>(allreduce_bytes), num_devices) : 0.0;
  if (row_wise_dim > 0) ms += model.rowwise_collectives_ms(row_wise_dim, num_devices);
  if (host_row_wise_dim > 0 && devices_per_host >= 2) {
    ms += model.rowwise_collectives_ms(host_row_wise_dim, std::min(devices_per_host, num_devices));
  }
  return ms;
}

double alltoall_groups_ms(const CostModel& model, int groups, int num_devices) {
  return groups > 1 && num_devices > 1 ? (groups - 1) * model.alltoall_group_ms(num_devices) : 0.0;
}

double plan_collectives_ms(const CostModel& model, const std::vector<DeviceShards>& devices) {
  if (devices.empty()) return 0.0;
  const DeviceShards& any = devices.front();
  const int num_devices = static_cast<int>(devices.size());
  return extra_collectives_ms(model, any.allreduce_bytes, any.row_wise_dim, num_devices, any.host_row_wise_dim,
                              any.devices_per_host) +
         alltoall_groups_ms(model, any.alltoall_groups, num_devices);
}

void refuse_unscorable(const CostModel& model, const Table& table, int64_t cols, double compute_ms) {
  if (std::isfinite(compute_ms) && compute_ms >= 0.0) return;
  throw InputError(
      fmt::format("table \"{}\" ({} x {}): the cost model {} gives no finite cost for {} of its columns "
                  "(it predicts {}): the table lies beyond what the model can score; plan it with "
                  "another model",
                  table.name, table.rows, table.dim, model.name(), cols, compute_ms));
}

namespace {

// Names what made a device's cost non-finite: one of its shards alone, else the device as a whole.
[[noreturn]] void refuse_device(const CostModel& model, const Plan& plan, const DeviceShards& device,
                                std::size_t rank) {
  for (std::size_t i = 0; i < device.pieces.size(); ++i) {
    const Table& piece = device.pieces[i];
    const TableSharding& from = plan.tables[device.plan_tables[i]];
    Table named = piece;  // the plan's table, as the user knows it
    named.name = from.name;
    named.rows = from.rows;
    named.dim = from.dim;
    refuse_unscorable(model, named, piece.dim, model.predict_compute({{shard_features(piece, piece.dim)}}).front());
  }
  throw InputError(
      fmt::format("device {}: the cost model {} gives no finite cost for its {} shards ({} columns in all)", rank,
                  model.name(), device.pieces.size(), device.dim_sum));
}

}  // namespace

std::vector<DeviceCost> plan_costs_from_compute(const CostModel& model, const Plan& plan,
                                                const std::vector<DeviceShards>& devices,
                                                const std::vector<double>& compute_ms) {
  std::vector<int64_t> dim_sums;
  std::vector<double> input_ids;
  for (const auto& device : devices) {
    dim_sums.push_back(device.dim_sum);
    input_ids.push_back(device.input_ids);
  }
  const std::vector<double> cache_ms = plan_cache_ms(plan, devices, model);
  return costs_from_compute(model, compute_ms, dim_sums, input_ids, plan_collectives_ms(model, devices),
                            cache_or_none(cache_ms));
}

std::vector<DeviceCost> score_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  std::vector<DeviceShards> devices = device_shards(plan, tables);
  std::vector<DeviceCost> costs =
      plan_costs_from_compute(model, plan, devices, model.predict_compute(compute_sets(devices)));
  for (std::size_t r = 0; r < costs.size(); ++r) {
    if (!std::isfinite(costs[r].total_ms())) refuse_device(model, plan, devices[r], r);
  }
  return costs;
}

}  // namespace shardplan
