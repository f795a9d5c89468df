#include "shardplan/measured_comm.hpp"

namespace shardplan {

std::vector<double> measured_step_ms(const std::vector<double>& compute_ms, const MeasuredComm& comm) {
  std::vector<double> step;
  for (std::size_t d = 0; d < compute_ms.size(); ++d) step.push_back(compute_ms[d] + comm.fw_ms.at(d) + comm.bw_ms.at(d));
  return step;
}

}  // namespace shardplan
