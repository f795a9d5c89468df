#include "shardplan/core/measured_comm.hpp"

#include <algorithm>
#include <cmath>

namespace shardplan {

std::optional<CommToMeasure> comm_to_measure(const Plan& plan, const std::vector<std::optional<double>>& compute_ms) {
  CommToMeasure comm;
  for (const auto& ms : compute_ms) {
    if (!ms) return std::nullopt;
    comm.compute_ms.push_back(*ms);
  }
  comm.dim_sums.assign(static_cast<std::size_t>(plan.cluster.num_devices), 0);
  double gradient_bytes = 0.0;
  for (const auto& table : plan.tables) {
    switch (table.type) {
      case ShardingType::kRowWise:
        comm.rw_dim += table.dim;
        break;
      case ShardingType::kDataParallel:
        gradient_bytes += static_cast<double>(replica_gradient_bytes(table));
        break;
      case ShardingType::kTableRowWise: {
        // TorchRec reduce-scatters the blocks' partial sums within the host, then each host rank sends its
        // samples' share to their owners: width dim / K per rank, the remainder to the host's first ranks.
        const int per_host = std::max(plan.cluster.devices_per_host, 1);
        const int first = table.shards.empty() ? 0 : table.shards.front().rank / per_host * per_host;
        // A host of one GPU holds the whole table: nothing to reduce.
        if (per_host >= 2) {
          comm.devices_per_host = per_host;
          comm.host_rw_dims.resize(static_cast<std::size_t>(plan.cluster.num_devices), 0);
        }
        for (int k = 0; k < per_host && first + k < plan.cluster.num_devices; ++k) {
          const auto r = static_cast<std::size_t>(first + k);
          if (per_host >= 2) comm.host_rw_dims[r] += table.dim;
          comm.dim_sums[r] += table.dim / per_host + (k < table.dim % per_host ? 1 : 0);
        }
        break;
      }
      default:
        for (const auto& shard : table.shards) comm.dim_sums[static_cast<std::size_t>(shard.rank)] += shard.cols;
    }
  }
  // Timed as fp32 gradients of the same bytes.
  comm.allreduce_floats = static_cast<int64_t>(std::ceil(gradient_bytes / 4.0));
  return comm;
}

std::vector<double> measured_step_ms(const std::vector<double>& compute_ms, const MeasuredComm& comm) {
  std::vector<double> step;
  for (std::size_t d = 0; d < compute_ms.size(); ++d) {
    const double allreduce = comm.allreduce_ms.empty() ? 0.0 : comm.allreduce_ms.at(d);
    step.push_back(compute_ms[d] + comm.fw_ms.at(d) + comm.bw_ms.at(d) + allreduce);
  }
  return step;
}

}  // namespace shardplan
