#pragma once
// Table-wise placement of a given set of pieces by greedy grid search (method.md, step 1): pieces in
// descending predicted cost, each to the device of lowest predicted compute (ties: less memory) where
// memory fits and the device's width stays within s x (total width / devices), for every s of a grid;
// the placement with the lowest plan cost wins.
#include <cstdint>
#include <limits>
#include <vector>

#include "shard_catalog.hpp"
#include "shardplan/core/plan.hpp"

namespace shardplan {

// One piece of a table: a catalog variant starting at a column.
struct Piece {
  int variant = 0;
  int col_offset = 0;
};

struct Placement {
  bool feasible = false;
  int64_t unplaced_bytes = 0;  // what found no device (infeasible placements only)
  double max_cost = std::numeric_limits<double>::infinity();
  double width_cap_multiplier = 0.0;  // the grid point that gave this placement (0: memory fallback)
  std::vector<int> ranks;             // per piece, in the order given to place()
  std::vector<DeviceCost> devices;
};

// Feasible before infeasible, then fewer unplaced bytes, then the lower plan cost.
bool better_placement(const Placement& a, const Placement& b);

struct GridOptions {
  int points = 11;
  double min = 1.0;
  double max = 1.5;
};

class GridPlacer {
 public:
  GridPlacer(const ShardCatalog& catalog, const CostModel& model, const Cluster& cluster, GridOptions grid);

  // Thread-safe. When no grid point places everything, falls back to placing by memory alone (largest
  // first on the emptiest device), so a set of pieces that fits anywhere is never reported infeasible
  // for want of balance.
  Placement place(const std::vector<Piece>& pieces) const;
  // The placement at one grid point only (a quick estimate of what place() would find).
  Placement place_at(const std::vector<Piece>& pieces, double width_cap_multiplier) const;
  // place() over the grid point width_cap_multiplier and its two neighbours (the whole grid when it is
  // not a grid point): a split rarely moves the best point far, and large searches cannot afford them all.
  Placement place_near(const std::vector<Piece>& pieces, double width_cap_multiplier) const;

 private:
  struct Loads;
  struct Scratch;
  struct Checkpoint;
  struct Prepared;
  Prepared prepare(const std::vector<Piece>& pieces) const;
  Placement place_points(const std::vector<Piece>& pieces, std::size_t first, std::size_t last) const;
  // Places order[start..] onto the state in `scratch` and `out` (empty when start is 0). Returns whether
  // the width cap changed any choice; when it did not, a looser cap gives the same placement. `reached`
  // (may be null) receives the state where the cap first turned a piece from its preferred device.
  bool place_by_cost(const std::vector<Piece>& pieces, const std::vector<int>& order, const std::vector<int>& group,
                     const std::vector<int>& distinct_cols, double width_cap, std::size_t start, Scratch& scratch,
                     Placement& out, Checkpoint* reached) const;
  void place_by_memory(const std::vector<Piece>& pieces, Scratch& scratch, Placement& out) const;
  void finish(Scratch& scratch, Placement& out) const;

  const ShardCatalog& catalog_;
  const CostModel& model_;
  int devices_;
  int64_t usable_bytes_;
  std::vector<double> grid_;
};

}  // namespace shardplan
