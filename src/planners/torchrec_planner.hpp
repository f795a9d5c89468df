#pragma once
#include <memory>

#include "shardplan/core/deadline.hpp"
#include "shardplan/core/sharding_type.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

// TorchRec's column-wise shard width for a table of `dim` columns: the smallest divisor of dim that is
// at least min_partition and a multiple of 4; dim itself (no split) when there is none.
int torchrec_column_width(int dim, int min_partition);
inline constexpr int kTorchRecMinPartition = 128;  // TorchRec's default

// all_types: TorchRec's default choice of sharding types ("torchrec_all_types"); otherwise table-wise and
// column-wise only ("torchrec"). Either within `allowed` (the sharders TorchRec is given) and each table's
// own types. Past `deadline` it gives up, throwing DeadlinePassed.
std::unique_ptr<Planner> make_torchrec_planner(bool all_types, Deadline deadline = {},
                                               ShardingTypeSet allowed = ShardingTypeSet::all());

// "torchrec_cw32": table-wise and column-wise as "torchrec", column-wise shards from 32 columns
// (ParameterConstraints(min_partition=32)).
std::unique_ptr<Planner> make_torchrec_cw32_planner(Deadline deadline = {},
                                                    ShardingTypeSet allowed = ShardingTypeSet::all());

}  // namespace shardplan
