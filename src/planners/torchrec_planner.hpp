#pragma once
#include <memory>

#include "shardplan/planner.hpp"

namespace shardplan {

// TorchRec's column-wise shard width for a table of `dim` columns: the smallest divisor of dim that is
// at least min_partition and a multiple of 4; dim itself (no split) when there is none.
int torchrec_column_width(int dim, int min_partition);

std::unique_ptr<Planner> make_torchrec_planner();

}  // namespace shardplan
