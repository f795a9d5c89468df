#include <fmt/format.h>

#include "shardplan/errors.hpp"
#include "shardplan/planner.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

void check_total_capacity(const std::vector<Table>& tables, const Cluster& cluster) {
  // Summed in long double: each table is below 2^60 bytes, but thousands of them can overflow int64.
  long double total = 0;
  for (const auto& table : tables) total += static_cast<long double>(table_memory_bytes(table, cluster.optimizer));
  long double capacity = static_cast<long double>(cluster.usable_bytes_per_device()) * cluster.num_devices;
  if (total > capacity) {
    throw InfeasibleError(fmt::format("the tables need {} in total but {} devices offer {} ({} each)",
                                      format_byte_total(total), cluster.num_devices, format_byte_total(capacity),
                                      format_bytes(cluster.usable_bytes_per_device())));
  }
}

void check_table_wise_capacity(const std::vector<Table>& tables, const Cluster& cluster) {
  const int64_t usable = cluster.usable_bytes_per_device();
  for (const auto& table : tables) {
    int64_t bytes = table_memory_bytes(table, cluster.optimizer);
    if (bytes > usable) {
      throw InfeasibleError(fmt::format(
          "table \"{}\" ({} x {}, {}) needs {} with {} state, but a device offers {} ({} per GPU, reserve {})",
          table.name, table.rows, table.dim, dtype_name(table.dtype), format_bytes(bytes),
          optimizer_name(cluster.optimizer), format_bytes(usable), format_bytes(cluster.memory_per_device_bytes),
          cluster.reserve_fraction));
    }
  }
  check_total_capacity(tables, cluster);
}

}  // namespace shardplan
