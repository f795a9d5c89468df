#include "shardplan/core/plan_io.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_format.hpp"

namespace shardplan {

namespace {

using ojson = nlohmann::ordered_json;

ojson cost_or_null(const std::optional<std::vector<DeviceCost>>& costs, std::size_t rank,
                   double (*field)(const DeviceCost&)) {
  if (!costs) return nullptr;
  return field((*costs)[rank]);
}

ojson table_to_plan_json(const TableSharding& table, int devices_per_host) {
  ojson ranks = ojson::array();
  ojson shards = ojson::array();
  for (const auto& shard : table.shards) {
    ranks.push_back(shard.rank);
    shards.push_back(ojson{{"rank", shard.rank},
                           {"shard_offsets", {shard.row_offset, shard.col_offset}},
                           {"shard_sizes", {shard.rows, shard.cols}},
                           {"placement", placement_string(shard.rank, devices_per_host)}});
  }
  ojson out{{"name", table.name},
            {"rows", table.rows},
            {"dim", table.dim},
            {"dtype", std::string(dtype_name(table.dtype))},
            {"sharding_type", std::string(sharding_type_name(table.type))},
            // TorchRec trains replicas with its dense kernel (and DDP), sharded tables with FBGEMM's fused one,
            // or its UVM-caching one when the table lives in host memory.
            {"compute_kernel", std::string(compute_kernel_name(table))}};
  if (table.cache) out["cache_params"] = ojson{{"algorithm", "LRU"}, {"load_factor", table.cache->load_factor}};
  out["ranks"] = std::move(ranks);
  out["shards"] = std::move(shards);
  return out;
}

ojson measure_loop_to_json(const MeasureLoopSummary& loop) {
  ojson devices = ojson::array();
  for (const auto& d : loop.devices) {
    devices.push_back(
        ojson{{"rank", d.rank},
              {"predicted_compute_ms", d.predicted_ms},
              {"measured_compute_ms", d.measured_ms},
              {"error_percent", d.measured_ms > 0 ? 100.0 * (d.predicted_ms - d.measured_ms) / d.measured_ms : 0.0}});
  }
  return ojson{{"budget_sets", loop.budget},
               {"sets_measured", loop.sets_measured},
               {"searches", loop.rounds},
               {"candidates", loop.candidates},
               {"chosen_by_prediction_rank", loop.chosen},
               {"chosen_from", loop.chosen_from},
               {"rival_sets_measured", loop.rival_sets_measured},
               {"compute_scale", loop.compute_scale},
               {"corrected_tables", loop.corrected_tables},
               {"bound_measured", loop.verified},
               {"estimated_max_total_ms", loop.estimated_max_ms},
               {"measured_devices", std::move(devices)}};
}

ojson search_to_json(const SearchSummary& search) {
  return ojson{
      {"steps", search.steps},
      {"step_budget", search.step_budget},
      {"splits", search.splits},
      {"stopped", search.stopped},
      {"refine_rounds", search.refine_rounds},
      {"sharding_types", search.sharding_types},
      {"type_moves", search.type_moves},
      {"converted_tables", search.converted},
      {"cut_short", search.cut_short},
      {"time_limit_seconds", search.time_limit_seconds > 0 ? ojson(search.time_limit_seconds) : ojson(nullptr)},
      {"started_from", search.started_from.empty() ? ojson("search") : ojson(search.started_from)},
      {"search_max_total_ms", search.started_from.empty() ? ojson(nullptr)
                              : search.search_max_ms > 0  ? ojson(search.search_max_ms)
                                                          : ojson("no plan")}};
}

ojson replan_to_json(const ReplanSummary& replan) {
  ojson tables = ojson::array();
  for (const TableMove& move : replan.changes.tables) {
    tables.push_back(ojson{{"name", move.table},
                           {"change", std::string(table_change_name(move.change))},
                           {"from", move.from},
                           {"to", move.to},
                           {"bytes", move.bytes}});
  }
  const PlanMoves& changes = replan.changes;
  return ojson{{"from", replan.from},
               {"move_budget_bytes", replan.move_budget_bytes},
               {"moved_bytes", changes.moved_bytes},
               {"rebuilt_bytes", changes.rebuilt_bytes},
               {"added_bytes", changes.added_bytes},
               {"old_max_total_ms", replan.old_max_total_ms},
               {"moves", replan.moves},
               {"type_pass_moves", replan.type_pass_moves},
               {"cut_short", replan.cut_short},
               {"kept_tables", changes.kept_tables},
               {"dropped_tables", changes.dropped},
               {"tables", std::move(tables)}};
}

}  // namespace

ojson plan_to_json(const Plan& plan) {
  const Cluster& cluster = plan.cluster;
  ojson doc = {
      {"format", kPlanFormat},
      {"algorithm", plan.algorithm},
      {"num_devices", cluster.num_devices},
      {"devices_per_host", cluster.devices_per_host},
      {"memory_per_device_bytes", cluster.memory_per_device_bytes},
      {"seed", plan.seed},
      {"optimizer", std::string(optimizer_name(cluster.optimizer))},
      {"reserve_fraction", cluster.reserve_fraction},
      {"usable_memory_per_device_bytes", cluster.usable_bytes_per_device()},
      {"cost_model", plan.cost_model.empty() ? ojson(nullptr) : ojson(plan.cost_model)},
      {"cost_model_hardware", plan.cost_model_hardware ? hardware_to_json(*plan.cost_model_hardware) : ojson(nullptr)}};
  if (!cluster.hardware.empty()) doc["hardware"] = cluster.hardware;
  // Only with host memory, so that plans without it read as before.
  const bool host_memory = cluster.offers_host_memory();
  if (host_memory) {
    doc["ddr_per_host_bytes"] = cluster.ddr_per_host_bytes;
    doc["host_link_GBps"] = cluster.host_link_gb_per_s;
  }

  ojson tables = ojson::array();
  for (const auto& table : plan.tables) tables.push_back(table_to_plan_json(table, cluster.devices_per_host));
  doc["tables"] = std::move(tables);

  std::vector<DeviceUsage> usage = device_usage(plan);
  ojson devices = ojson::array();
  for (std::size_t r = 0; r < usage.size(); ++r) {
    ojson device{{"rank", r},
                 {"memory_bytes", usage[r].memory_bytes},
                 {"num_shards", usage[r].num_shards},
                 {"dim_sum", usage[r].dim_sum},
                 {"compute_ms", cost_or_null(plan.device_costs, r, [](const DeviceCost& c) { return c.compute_ms; })},
                 {"fw_comm_ms", cost_or_null(plan.device_costs, r, [](const DeviceCost& c) { return c.fw_comm_ms; })},
                 {"bw_comm_ms", cost_or_null(plan.device_costs, r, [](const DeviceCost& c) { return c.bw_comm_ms; })}};
    if (host_memory) {
      device["ddr_bytes"] = usage[r].ddr_bytes;
      device["cache_ms"] = cost_or_null(plan.device_costs, r, [](const DeviceCost& c) { return c.cache_ms; });
    }
    device["total_ms"] = cost_or_null(plan.device_costs, r, [](const DeviceCost& c) { return c.total_ms(); });
    devices.push_back(std::move(device));
  }
  doc["devices"] = std::move(devices);
  if (plan.measure_loop) doc["measure_loop"] = measure_loop_to_json(*plan.measure_loop);
  if (plan.search) doc["search"] = search_to_json(*plan.search);
  if (plan.replan) doc["replan"] = replan_to_json(*plan.replan);

  int64_t max_memory = 0;
  for (const auto& u : usage) max_memory = std::max(max_memory, u.memory_bytes);
  ojson summary;
  const std::optional<CostSummary> costs =
      plan.device_costs ? std::optional(summarise_costs(*plan.device_costs)) : std::nullopt;
  summary["max_total_ms"] = costs ? ojson(costs->max_ms) : ojson(nullptr);
  summary["mean_total_ms"] = costs ? ojson(costs->mean_ms) : ojson(nullptr);
  summary["max_memory_bytes"] = max_memory;
  if (host_memory) {
    const std::vector<int64_t> hosts = host_ddr_bytes(plan, usage);
    summary["max_host_ddr_bytes"] = hosts.empty() ? 0 : *std::max_element(hosts.begin(), hosts.end());
  }
  // No wall-clock planning time here: the same input and seed must give a byte-identical file. The
  // report and the log state it.
  doc["summary"] = std::move(summary);
  return doc;
}

std::string plan_to_string(const Plan& plan) { return dump_readable(plan_to_json(plan)) + "\n"; }

void write_plan(const Plan& plan, const std::string& path) {
  std::string text = plan_to_string(plan);
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw RuntimeFailure("standard output: write failed");
    return;
  }
  write_file_atomically(path, text);
}

}  // namespace shardplan
