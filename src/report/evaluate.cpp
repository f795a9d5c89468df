#include "shardplan/report/evaluate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/cost_model/metrics.hpp"

namespace shardplan {

PlanEvaluation evaluate_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  PlanEvaluation evaluation;
  evaluation.algorithm = plan.algorithm;
  evaluation.cost_model = model.name();
  evaluation.cost_model_hardware = model.hardware();
  std::vector<DeviceUsage> usage = device_usage(plan);
  std::vector<DeviceCost> costs = score_plan(plan, tables, model);
  for (std::size_t r = 0; r < usage.size(); ++r) {
    DeviceEvaluation device;
    device.usage = usage[r];
    device.predicted = costs[r];
    evaluation.devices.push_back(std::move(device));
  }
  evaluation.predicted = summarise_costs(costs);
  return evaluation;
}

void attach_measurements(PlanEvaluation& evaluation, const std::vector<std::optional<double>>& measured_ms,
                         const std::vector<std::string>& skipped) {
  MeasuredSummary summary;
  std::vector<double> predicted;
  std::vector<double> measured;
  for (std::size_t r = 0; r < evaluation.devices.size(); ++r) {
    DeviceEvaluation& device = evaluation.devices[r];
    device.measured_compute_ms = r < measured_ms.size() ? measured_ms[r] : std::nullopt;
    device.not_measured = r < skipped.size() ? skipped[r] : "";
    if (!device.measured_compute_ms) continue;
    ++summary.devices;
    if (*device.measured_compute_ms >= summary.max_compute_ms) {
      summary.max_compute_ms = *device.measured_compute_ms;
      summary.max_rank = static_cast<int>(r);
    }
    summary.predicted_max_compute_ms = std::max(summary.predicted_max_compute_ms, device.predicted.compute_ms);
    if (device.usage.num_shards > 0 && *device.measured_compute_ms > 0.0) {
      predicted.push_back(device.predicted.compute_ms);
      measured.push_back(*device.measured_compute_ms);
    }
  }
  if (!measured.empty()) {
    Metrics metrics = compute_metrics(predicted, measured);
    summary.mape_percent = metrics.mape;
    summary.spearman = metrics.spearman;
  }
  evaluation.measured = summary;
}

void attach_comm_measurements(PlanEvaluation& evaluation, const MeasuredComm& comm) {
  if (!evaluation.measured) throw InputError("attach_comm_measurements: the compute must be measured first");
  std::vector<double> compute;
  for (const auto& device : evaluation.devices) {
    if (!device.measured_compute_ms) throw InputError("attach_comm_measurements: a device's compute was not measured");
    compute.push_back(*device.measured_compute_ms);
  }
  const std::vector<double> steps = measured_step_ms(compute, comm);
  MeasuredSummary& summary = *evaluation.measured;
  summary.max_total_ms = 0.0;
  for (std::size_t r = 0; r < steps.size(); ++r) {
    const double allreduce = comm.allreduce_ms.empty() ? 0.0 : comm.allreduce_ms[r];
    evaluation.devices[r].measured_fw_ms = comm.fw_ms[r];
    evaluation.devices[r].measured_bw_ms = comm.bw_ms[r] + allreduce;
    if (!comm.allreduce_ms.empty()) evaluation.devices[r].measured_allreduce_ms = allreduce;
    if (steps[r] >= *summary.max_total_ms) {
      summary.max_total_ms = steps[r];
      summary.max_total_rank = static_cast<int>(r);
    }
  }
}

nlohmann::ordered_json evaluation_to_json(const PlanEvaluation& evaluation) {
  using ojson = nlohmann::ordered_json;
  ojson devices = ojson::array();
  for (std::size_t r = 0; r < evaluation.devices.size(); ++r) {
    const DeviceEvaluation& d = evaluation.devices[r];
    ojson row{{"rank", r},
              {"num_shards", d.usage.num_shards},
              {"memory_bytes", d.usage.memory_bytes},
              {"dim_sum", d.usage.dim_sum},
              {"compute_ms", d.predicted.compute_ms},
              {"fw_comm_ms", d.predicted.fw_comm_ms},
              {"bw_comm_ms", d.predicted.bw_comm_ms},
              {"total_ms", d.predicted.total_ms()}};
    if (evaluation.measured) {
      row["measured_compute_ms"] = d.measured_compute_ms ? ojson(*d.measured_compute_ms) : ojson(nullptr);
      if (!d.not_measured.empty()) row["not_measured"] = d.not_measured;
      if (d.measured_fw_ms && d.measured_bw_ms) {
        row["measured_fw_comm_ms"] = *d.measured_fw_ms;
        row["measured_bw_comm_ms"] = *d.measured_bw_ms;
        if (d.measured_allreduce_ms) row["measured_allreduce_ms"] = *d.measured_allreduce_ms;
        row["measured_total_ms"] = *d.measured_compute_ms + *d.measured_fw_ms + *d.measured_bw_ms;
      }
    }
    devices.push_back(std::move(row));
  }
  ojson doc{{"algorithm", evaluation.algorithm},
            {"cost_model", evaluation.cost_model},
            {"cost_model_hardware", hardware_to_json(evaluation.cost_model_hardware)},
            {"devices", std::move(devices)},
            {"predicted",
             {{"max_total_ms", evaluation.predicted.max_ms},
              {"mean_total_ms", evaluation.predicted.mean_ms},
              {"bounding_rank", evaluation.predicted.slowest},
              {"max_compute_ms", evaluation.predicted.max_compute_ms}}}};
  if (evaluation.measured) {
    const MeasuredSummary& m = *evaluation.measured;
    doc["measured"] = ojson{{"devices", m.devices},
                            {"max_compute_ms", m.max_compute_ms},
                            {"max_rank", m.max_rank},
                            {"predicted_max_compute_ms", m.predicted_max_compute_ms},
                            {"compute_mape_percent", m.mape_percent},
                            {"compute_spearman", m.spearman}};
    if (m.max_total_ms) {
      doc["measured"]["max_total_ms"] = *m.max_total_ms;
      doc["measured"]["max_total_rank"] = m.max_total_rank;
    }
  }
  return doc;
}

std::string format_evaluation(const PlanEvaluation& evaluation) {
  const bool measured = evaluation.measured.has_value();
  std::string out =
      fmt::format("plan: {} on {} GPUs, scored by {} (measured on: {})\n", evaluation.algorithm,
                  evaluation.devices.size(), evaluation.cost_model, describe_hardware(evaluation.cost_model_hardware));
  out += fmt::format("{:>6} {:>6} {:>11} {:>7} {:>9} {:>9} {:>9} {:>9}", "rank", "shards", "memory", "width", "compute",
                     "fw_comm", "bw_comm", "total");
  const bool comm_measured = measured && evaluation.measured->max_total_ms.has_value();
  out += measured ? fmt::format(" {:>9} {:>7}", "measured", "error") : "";
  out += comm_measured ? fmt::format(" {:>9} {:>9} {:>9}\n", "m_fw", "m_bw", "m_total") : "\n";
  for (std::size_t r = 0; r < evaluation.devices.size(); ++r) {
    const DeviceEvaluation& d = evaluation.devices[r];
    out += fmt::format("{:>6} {:>6} {:>11} {:>7} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}", r, d.usage.num_shards,
                       format_bytes(d.usage.memory_bytes), d.usage.dim_sum, d.predicted.compute_ms,
                       d.predicted.fw_comm_ms, d.predicted.bw_comm_ms, d.predicted.total_ms());
    if (!measured) {
      out += "\n";
    } else if (!d.measured_compute_ms) {
      out += fmt::format("  not measured: {}\n", d.not_measured);
    } else {
      if (*d.measured_compute_ms > 0.0) {
        double error = 100.0 * (d.predicted.compute_ms - *d.measured_compute_ms) / *d.measured_compute_ms;
        out += fmt::format(" {:>9.3f} {:>+6.1f}%", *d.measured_compute_ms, error);
      } else {
        out += fmt::format(" {:>9.3f} {:>7}", *d.measured_compute_ms, "-");
      }
      if (comm_measured && d.measured_fw_ms && d.measured_bw_ms) {
        out += fmt::format(" {:>9.3f} {:>9.3f} {:>9.3f}", *d.measured_fw_ms, *d.measured_bw_ms,
                           *d.measured_compute_ms + *d.measured_fw_ms + *d.measured_bw_ms);
      }
      out += "\n";
    }
  }
  out += fmt::format("predicted: {}, max compute {:.3f} ms\n", format_cost_summary(evaluation.predicted),
                     evaluation.predicted.max_compute_ms);
  if (measured) {
    const MeasuredSummary& m = *evaluation.measured;
    out += fmt::format(
        "measured compute on this machine ({} of {} devices): max {:.3f} ms on rank {} (predicted max {:.3f} ms), "
        "per-device error {:.1f}% (MAPE), rank correlation {:.3f}\n",
        m.devices, evaluation.devices.size(), m.max_compute_ms, m.max_rank, m.predicted_max_compute_ms, m.mape_percent,
        m.spearman);
    if (m.max_total_ms) {
      out += fmt::format(
          "measured step (compute, then the collectives timed across ranks on this host): max {:.3f} ms on rank {} "
          "(predicted max {:.3f} ms)\n",
          *m.max_total_ms, m.max_total_rank, evaluation.predicted.max_ms);
      if (!evaluation.devices.empty() && evaluation.devices.front().measured_allreduce_ms) {
        double slowest = 0.0;
        for (const auto& d : evaluation.devices) slowest = std::max(slowest, d.measured_allreduce_ms.value_or(0.0));
        out += fmt::format("measured all-reduce of the data-parallel gradients (in m_bw): up to {:.3f} ms\n", slowest);
      }
    }
  }
  return out;
}

}  // namespace shardplan
