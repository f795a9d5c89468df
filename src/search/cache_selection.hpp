#pragma once
// Feasibility first, past HBM: when the tables do not fit the cluster's HBM and its hosts offer memory,
// some tables start as row-wise blocks kept in host memory behind an HBM cache (TorchRec's
// fused_uvm_caching), each at the load factor that costs least for the HBM it frees. Row-wise blocks
// spread a table's DDR evenly over the hosts, so no host needs placing.
#include <cstdint>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

// The shares of HBM the tables may fill before caching starts, and that caching aims for, tried in turn:
// the search must still pack the other tables around the blocks, and column slices of a huge table each
// carry its rows' rowwise state, so a plan that fits on paper may not place.
inline constexpr double kCachePackingMargins[] = {0.95, 0.85, 0.7, 0.5, 0.3};

// Load factors the search offers a cache (those at or above a piece's smallest sound one).
inline constexpr double kCacheLevels[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5};

struct CacheSelection {
  std::vector<double> load_factors;  // per table: its cache's load factor; 0: in HBM
  int cached = 0;
};

// The HBM of a table's largest row-wise block (ceil(rows / devices) rows): whole, or its cache and state
// at `load_factor` (> 0).
int64_t row_block_hbm_bytes(const Table& table, const Cluster& cluster, double load_factor);

// `row_wise` marks the tables that start as row-wise blocks; a table chosen for caching joins them.
// `selection` holds what an earlier call chose (kept; more start-ups may need more caching). Chooses
// nothing when the tables fit HBM within the margin (plans then stay as they were) or the hosts offer no
// memory; `packing_margin` is the share of HBM it fills at most. Throws InfeasibleError naming the shortfall when even
// caching every table it may leaves HBM short, or the hosts' memory cannot hold the cached tables.
void choose_cached_tables(const std::vector<Table>& tables, const Cluster& cluster, ShardingTypeSet allowed,
                          const CostModel& model, double packing_margin, std::vector<char>& row_wise,
                          CacheSelection& selection);

}  // namespace shardplan
