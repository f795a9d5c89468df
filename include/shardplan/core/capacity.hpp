#pragma once
// What no plan can hold: the checks planners make before they search, each refusal naming the tables and
// the memory they need against what the devices offer.
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

// Refuses tables larger than the whole cluster, which no sharding can hold, and pinned tables larger
// than their ranks (InfeasibleError naming them). Pinned ranks must be devices (check_table_constraints).
void check_total_capacity(const std::vector<Table>& tables, const Cluster& cluster);

// Refuses up front what no table-wise placement can hold: a table larger than a device, or tables larger
// than the cluster. Throws InfeasibleError naming the table or the totals.
void check_table_wise_capacity(const std::vector<Table>& tables, const Cluster& cluster);

}  // namespace shardplan
