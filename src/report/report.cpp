#include "shardplan/report/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "shardplan/core/units.hpp"
#include "shardplan/report/replan_report.hpp"

namespace shardplan {

namespace {

std::string cost_cell(const std::optional<std::vector<DeviceCost>>& costs, std::size_t rank,
                      double (*field)(const DeviceCost&)) {
  if (!costs) return fmt::format("{:>9}", "-");
  return fmt::format("{:>9.3f}", field((*costs)[rank]));
}

std::string device_row(const Plan& plan, const std::vector<DeviceUsage>& usage, std::size_t r) {
  const DeviceUsage& u = usage[r];
  double share =
      100.0 * static_cast<double>(u.memory_bytes) / static_cast<double>(plan.cluster.usable_bytes_per_device());
  return fmt::format(
      "{:>6}  {:>11} {:>6.1f}%  {:>6} {:>11} {:>7}{}{}{}{}\n", r, format_bytes(u.memory_bytes), share, u.num_shards,
      fmt::format("{}/{}/{}/{}", u.num_table_wise, u.num_column_wise, u.num_row_wise, u.num_data_parallel), u.dim_sum,
      cost_cell(plan.device_costs, r, [](const DeviceCost& c) { return c.compute_ms; }),
      cost_cell(plan.device_costs, r, [](const DeviceCost& c) { return c.fw_comm_ms; }),
      cost_cell(plan.device_costs, r, [](const DeviceCost& c) { return c.bw_comm_ms; }),
      cost_cell(plan.device_costs, r, [](const DeviceCost& c) { return c.total_ms(); }));
}

// Devices ordered heaviest first: by predicted total when known, else by memory.
std::vector<std::size_t> heaviest_first(const Plan& plan, const std::vector<DeviceUsage>& usage) {
  std::vector<std::size_t> order(usage.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (plan.device_costs) return (*plan.device_costs)[a].total_ms() > (*plan.device_costs)[b].total_ms();
    return usage[a].memory_bytes > usage[b].memory_bytes;
  });
  return order;
}

// Tables split by rows or replicated, by type: the plan's choices beyond table- and column-wise.
std::string format_row_and_replicated_tables(const Plan& plan) {
  constexpr std::size_t kNamesShown = 6;
  std::string out;
  for (ShardingType type : {ShardingType::kRowWise, ShardingType::kTableRowWise, ShardingType::kDataParallel}) {
    std::vector<std::string> names;
    for (const auto& table : plan.tables) {
      if (table.type != type) continue;
      std::string name = table.name;
      if (type == ShardingType::kTableRowWise && !table.shards.empty()) {
        name += fmt::format(" (host {})", table.shards.front().rank / plan.cluster.devices_per_host);
      }
      names.push_back(std::move(name));
    }
    if (names.empty()) continue;
    std::string list;
    for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > kNamesShown) list += fmt::format(", and {} more", names.size() - kNamesShown);
    out +=
        fmt::format("{}: {} table{}: {}\n", sharding_type_name(type), names.size(), names.size() == 1 ? "" : "s", list);
  }
  return out;
}

// The cached tables and the hosts' memory: only for plans that keep tables there.
std::string format_host_memory(const Plan& plan, const std::vector<DeviceUsage>& usage,
                               const std::vector<CachedTableReport>& cached) {
  if (!has_cached_tables(plan)) return "";
  const std::vector<int64_t> hosts = host_ddr_bytes(plan, usage);
  const auto most = std::max_element(hosts.begin(), hosts.end());
  std::string out =
      fmt::format("host memory: max {} ({:.1f}% of {}) on host {}; host link {:.1f} GB/s\n", format_bytes(*most),
                  100.0 * static_cast<double>(*most) / static_cast<double>(plan.cluster.ddr_per_host_bytes),
                  format_bytes(plan.cluster.ddr_per_host_bytes), most - hosts.begin(), plan.cluster.host_link_gb_per_s);
  for (const auto& table : cached) {
    out += fmt::format(
        "  cached \"{}\": load factor {:.3g}, predicted miss rate {:.1f}% of the rows a batch of {} touches, "
        "{:.0f} rows ({}) over the host link per device and step: {:.3f} ms\n",
        table.name, table.load_factor, 100.0 * table.miss_rate, table.batch, table.rows_fetched,
        format_bytes(static_cast<int64_t>(table.link_bytes)), table.cache_ms);
  }
  if (!cached.empty()) {
    out += "  (misses assume that the rows a batch reuses stay popular in the next: docs/cost-models.md)\n";
  }
  return out;
}

}  // namespace

std::string format_report(const Plan& plan, const ReportOptions& options, const PlanAnalysis& analysis) {
  const Cluster& c = plan.cluster;
  std::vector<DeviceUsage> usage = device_usage(plan);
  std::string out = fmt::format(
      "plan: {} on {} GPUs ({} per host{}), {} per GPU, {} usable for embeddings (optimizer {}, reserve {:g})\n",
      plan.algorithm, c.num_devices, c.devices_per_host, c.hardware.empty() ? "" : ", hardware " + c.hardware,
      format_bytes(c.memory_per_device_bytes), format_bytes(c.usable_bytes_per_device()), optimizer_name(c.optimizer),
      c.reserve_fraction);
  out += fmt::format("{:>6}  {:>11} {:>7}  {:>6} {:>11} {:>7}{:>9}{:>9}{:>9}{:>9}\n", "rank", "memory", "used",
                     "shards", "tw/cw/rw/dp", "width", "compute", "fw_comm", "bw_comm", "total");

  std::vector<std::size_t> shown(usage.size());
  std::iota(shown.begin(), shown.end(), 0);
  bool summarised = !options.full && static_cast<int>(usage.size()) > options.max_rows;
  if (summarised) {
    // The heaviest devices bound the step; a few of the lightest show the spread.
    std::vector<std::size_t> order = heaviest_first(plan, usage);
    std::size_t heavy = static_cast<std::size_t>(options.max_rows) * 3 / 4;
    std::size_t light = static_cast<std::size_t>(options.max_rows) - heavy;
    shown.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(heavy));
    shown.insert(shown.end(), order.end() - static_cast<std::ptrdiff_t>(light), order.end());
  }
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (summarised && i == static_cast<std::size_t>(options.max_rows) * 3 / 4) {
      out += fmt::format("{:>6}  ({} devices not shown; {} lists all)\n", "...", usage.size() - shown.size(),
                         options.full_report);
    }
    out += device_row(plan, usage, shown[i]);
  }

  auto max_mem = std::max_element(usage.begin(), usage.end(), [](const DeviceUsage& a, const DeviceUsage& b) {
    return a.memory_bytes < b.memory_bytes;
  });
  int64_t total_mem = std::accumulate(usage.begin(), usage.end(), int64_t{0},
                                      [](int64_t s, const DeviceUsage& u) { return s + u.memory_bytes; });
  auto max_width = std::max_element(usage.begin(), usage.end(),
                                    [](const DeviceUsage& a, const DeviceUsage& b) { return a.dim_sum < b.dim_sum; });
  out +=
      fmt::format("memory: max {} ({:.1f}% of usable) on rank {}, mean {}\n", format_bytes(max_mem->memory_bytes),
                  100.0 * static_cast<double>(max_mem->memory_bytes) / static_cast<double>(c.usable_bytes_per_device()),
                  max_mem - usage.begin(), format_bytes(total_mem / static_cast<int64_t>(usage.size())));
  out += fmt::format("width: max {} on rank {}\n", max_width->dim_sum, max_width - usage.begin());
  out += format_row_and_replicated_tables(plan);
  out += format_host_memory(plan, usage, analysis.cached);
  if (plan.device_costs) {
    const auto& costs = *plan.device_costs;
    const CostSummary summary = summarise_costs(costs);
    out += fmt::format("cost ({}{}): {}\n", plan.cost_model, options.model_by_default ? ", the default model" : "",
                       format_cost_summary(summary));
    if (plan.cost_model_hardware) {
      out += fmt::format("cost model measured on: {}\n", describe_hardware(*plan.cost_model_hardware));
      std::string beyond = comm_extrapolation_warning(*plan.cost_model_hardware, c.num_devices);
      if (!beyond.empty()) out += fmt::format("note: {}\n", beyond);
      std::string layout = host_layout_warning(*plan.cost_model_hardware, c.devices_per_host);
      if (!layout.empty()) out += fmt::format("note: {}\n", layout);
    }
    if (analysis.bound) {
      out += format_bounding_device(*analysis.bound, costs.at(static_cast<std::size_t>(analysis.bound->rank)));
    }
    out += format_baseline_comparison(analysis.baselines, summary.max_ms);
    if (plan.measure_loop) out += format_measure_loop(*plan.measure_loop);
    if (plan.replan) out += format_replan(*plan.replan, summary.max_ms);
  } else {
    out += "cost: not predicted (no cost model was used)\n";
  }
  out += fmt::format("planned {} tables in {:.3f} s\n", plan.tables.size(), plan.planning_seconds);
  if (plan.search && !plan.search->started_from.empty()) {
    out +=
        plan.search->search_max_ms > 0
            ? fmt::format("start: {}'s plan, after the sharding-type pass, scored below the search's own ({:.3f} ms)\n",
                          plan.search->started_from, plan.search->search_max_ms)
            : fmt::format("start: {}'s plan; the search found none ({} shows why)\n", plan.search->started_from,
                          options.without_baseline_starts);
  }
  if (plan.search && plan.search->cut_short) {
    out += fmt::format(
        "note: the time limit of {} s cut the search short after {} of {} split steps and {} refinement "
        "moves: this is the best plan found by then, not the search's answer\n",
        plan.search->time_limit_seconds, plan.search->steps, plan.search->step_budget, plan.search->refine_rounds);
  }
  return out;
}

std::string format_bounding_device(const BoundingDevice& bound, const DeviceCost& cost) {
  // Whether compute or the all-to-all dominates says what kind of change could help.
  std::string device = fmt::format("bounded by rank {} (compute {:.3f} ms, all-to-all {:.3f} ms)", bound.rank,
                                   cost.compute_ms, cost.fw_comm_ms + cost.bw_comm_ms);
  if (bound.drivers.empty()) return device + ": it holds no tables\n";
  // Only positive savings are "falls"; a table whose removal would not lower the total (a device that
  // finishes compute earlier waits longer in the all-to-all for the slowest one) is said so, not given a
  // negative fall.
  std::vector<std::string> names;
  std::vector<std::string> savings;
  std::vector<std::string> no_gain;
  for (const auto& d : bound.drivers) {
    std::string name = fmt::format("{} (cols {}, pooling {:.1f})", d.table, d.cols, d.pooling_factor);
    if (d.saving_ms > 0.0005) {
      names.push_back(std::move(name));
      savings.push_back(fmt::format("{:.3f}", d.saving_ms));
    } else {
      no_gain.push_back(std::move(name));
    }
  }
  std::string out = device;
  if (!names.empty()) {
    out += fmt::format(": its largest cost drivers are tables {}; without each its total falls {} ms",
                       fmt::join(names, ", "), fmt::join(savings, ", "));
  }
  if (!no_gain.empty()) {
    out += fmt::format(
        "{}without {} alone its total would not fall: it would wait longer for the slowest GPU in the "
        "all-to-all",
        names.empty() ? ": " : "; ", fmt::join(no_gain, " or "));
  }
  return out + "\n";
}

std::string format_measure_loop(const MeasureLoopSummary& loop) {
  std::string out = fmt::format(
      "measured in the loop: {} of {} shard sets over {} searches; chose {} plan, the model ranked {} of {} "
      "candidates; the model's compute scaled x{:.3f}, {} tables measured slower than predicted\n",
      loop.sets_measured, loop.budget, loop.rounds,
      loop.chosen_from == kSearchPlanSource ? std::string("the search's") : loop.chosen_from + "'s", loop.chosen + 1,
      loop.candidates, loop.compute_scale, loop.corrected_tables);
  if (loop.rival_sets_measured > 0) {
    out += fmt::format("  the rivals' bounds took {} of the sets\n", loop.rival_sets_measured);
  }
  if (loop.devices.empty()) return out + "  none of its devices was measured\n";
  std::vector<std::string> rows;
  for (const auto& d : loop.devices) {
    rows.push_back(fmt::format("rank {} {:.3f} -> {:.3f} ms ({:+.1f}%)", d.rank, d.predicted_ms, d.measured_ms,
                               d.measured_ms > 0 ? 100.0 * (d.measured_ms / d.predicted_ms - 1.0) : 0.0));
  }
  return out + fmt::format(
                   "  its measured devices, predicted -> measured compute: {}; slowest device {:.3f} ms with "
                   "measured compute{}\n",
                   fmt::join(rows, ", "), loop.estimated_max_ms,
                   loop.verified ? "" : " (its bound was not measured: the budget ran out)");
}

const BaselineOutcome* best_baseline(const std::vector<BaselineOutcome>& baselines) {
  const BaselineOutcome* best = nullptr;
  for (const auto& b : baselines) {
    if (b.max_total_ms && (!best || *b.max_total_ms < *best->max_total_ms)) best = &b;
  }
  return best;
}

std::string format_change(double baseline_ms, double plan_ms) {
  double change = baseline_ms > 0 ? 100.0 * (1.0 - plan_ms / baseline_ms) : 0.0;
  if (!std::isfinite(change) || std::abs(change) < 0.05) return "the same";
  return fmt::format("{:.1f}% {}", std::abs(change), change > 0 ? "lower" : "higher");
}

std::string format_baseline_comparison(const std::vector<BaselineOutcome>& baselines, double plan_max_ms) {
  if (baselines.empty()) return "";
  std::string out;
  if (const BaselineOutcome* best = best_baseline(baselines)) {
    out += fmt::format("vs best baseline: {} max {:.3f} ms -> this plan {:.3f} ms ({})\n", best->planner,
                       *best->max_total_ms, plan_max_ms, format_change(*best->max_total_ms, plan_max_ms));
  } else if (std::all_of(baselines.begin(), baselines.end(), [](const BaselineOutcome& b) { return b.out_of_time; })) {
    out += "vs baselines: none compared, the time limit passed first\n";
  } else {
    out += "vs baselines: none of them found a plan\n";
  }
  // Baselines usually fail for one reason (a table no device holds whole): one line per reason.
  std::vector<std::pair<const BaselineOutcome*, std::vector<std::string>>> failures;
  for (const auto& b : baselines) {
    if (b.max_total_ms) continue;
    auto same =
        std::find_if(failures.begin(), failures.end(), [&](const auto& f) { return f.first->failure == b.failure; });
    if (same == failures.end()) same = failures.insert(failures.end(), {&b, {}});
    same->second.push_back(b.planner);
  }
  for (const auto& [failed, planners] : failures) {
    out += fmt::format("baseline{} {}: {} ({})\n", planners.size() > 1 ? "s" : "", fmt::join(planners, ", "),
                       failed->out_of_time ? "not compared" : "no plan", failed->failure);
  }
  return out;
}

}  // namespace shardplan
