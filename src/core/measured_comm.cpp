#include "shardplan/measured_comm.hpp"

namespace shardplan {

std::optional<CommToMeasure> comm_to_measure(const Plan& plan, const std::vector<std::optional<double>>& compute_ms) {
  CommToMeasure comm;
  for (const auto& ms : compute_ms) {
    if (!ms) return std::nullopt;
    comm.compute_ms.push_back(*ms);
  }
  for (const auto& usage : device_usage(plan)) comm.dim_sums.push_back(usage.dim_sum);
  return comm;
}

std::vector<double> measured_step_ms(const std::vector<double>& compute_ms, const MeasuredComm& comm) {
  std::vector<double> step;
  for (std::size_t d = 0; d < compute_ms.size(); ++d) step.push_back(compute_ms[d] + comm.fw_ms.at(d) + comm.bw_ms.at(d));
  return step;
}

}  // namespace shardplan
