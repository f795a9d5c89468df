#include "shardplan/core/capacity.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

// The three tables that need the most memory, with what each needs: what decides a shortfall.
std::string largest_tables(const std::vector<Table>& tables, const Cluster& cluster) {
  std::vector<std::pair<int64_t, std::size_t>> by_size;
  for (std::size_t i = 0; i < tables.size(); ++i)
    by_size.emplace_back(table_memory_bytes(tables[i], cluster.optimizer), i);
  const std::size_t shown = std::min<std::size_t>(3, by_size.size());
  std::partial_sort(
      by_size.begin(), by_size.begin() + static_cast<std::ptrdiff_t>(shown), by_size.end(),
      [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<std::string> named;
  for (std::size_t k = 0; k < shown; ++k) {
    named.push_back(fmt::format("\"{}\" {}", tables[by_size[k].second].name, format_bytes(by_size[k].first)));
  }
  return fmt::format("{}", fmt::join(named, ", "));
}

// Tables pinned within a set of ranks must fit those ranks together: for each distinct pinned set S, the
// tables whose ranks all lie in S need at most |S| devices' memory (a table kept whole, one device's).
void check_pinned_capacity(const std::vector<Table>& tables, const Cluster& cluster) {
  const int64_t usable = cluster.usable_bytes_per_device();
  std::set<std::vector<int>> sets;
  for (const auto& table : tables) {
    if (table.constraints.pinned()) sets.insert(table.constraints.ranks);
  }
  for (const std::vector<int>& ranks : sets) {
    long double needed = 0;
    std::vector<std::string> names;
    for (const auto& table : tables) {
      const auto& own = table.constraints.ranks;
      if (own.empty() || !std::includes(ranks.begin(), ranks.end(), own.begin(), own.end())) continue;
      const int64_t bytes = table_memory_bytes(table, cluster.optimizer);
      const bool whole = !table_sharding_types(table, ShardingTypeSet::all()).allows(ShardingType::kColumnWise);
      if (whole && bytes > usable) {
        throw InfeasibleError(
            fmt::format("table \"{}\" needs {} whole (it may not be column-wise), more than a device "
                        "offers ({})",
                        table.name, format_bytes(bytes), format_bytes(usable)));
      }
      needed += static_cast<long double>(bytes);
      names.push_back(fmt::format("\"{}\"", table.name));
    }
    const long double offered = static_cast<long double>(usable) * static_cast<long double>(ranks.size());
    if (needed > offered) {
      throw InfeasibleError(fmt::format(
          "the tables pinned to ranks [{}] ({}) need {}, and those ranks offer {} ({} each)", fmt::join(ranks, ", "),
          fmt::join(names, ", "), format_byte_total(needed), format_byte_total(offered), format_bytes(usable)));
    }
  }
}

}  // namespace

void check_total_capacity(const std::vector<Table>& tables, const Cluster& cluster) {
  // Summed in long double: each table is below 2^60 bytes, but thousands of them can overflow int64.
  long double total = 0;
  for (const auto& table : tables) total += static_cast<long double>(table_memory_bytes(table, cluster.optimizer));
  long double capacity = static_cast<long double>(cluster.usable_bytes_per_device()) * cluster.num_devices;
  // With host memory, tables may live there behind a cache: the search checks HBM and DDR as it chooses them.
  const long double host_memory = static_cast<long double>(cluster.ddr_per_host_bytes) * cluster.num_hosts();
  if (cluster.offers_host_memory() && total > capacity + host_memory) {
    throw InfeasibleError(fmt::format(
        "the tables need {} in total but {} devices offer {} of HBM ({} each) and {} hosts {} of host memory ({} "
        "each): {} short; the largest tables: {}",
        format_byte_total(total), cluster.num_devices, format_byte_total(capacity),
        format_bytes(cluster.usable_bytes_per_device()), cluster.num_hosts(), format_byte_total(host_memory),
        format_bytes(cluster.ddr_per_host_bytes), format_byte_total(total - capacity - host_memory),
        largest_tables(tables, cluster)));
  }
  if (total > capacity && !cluster.offers_host_memory()) {
    throw InfeasibleError(
        fmt::format("the tables need {} in total but {} devices offer {} ({} each): {} short; the "
                    "largest tables: {}",
                    format_byte_total(total), cluster.num_devices, format_byte_total(capacity),
                    format_bytes(cluster.usable_bytes_per_device()), format_byte_total(total - capacity),
                    largest_tables(tables, cluster)));
  }
  check_pinned_capacity(tables, cluster);
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
