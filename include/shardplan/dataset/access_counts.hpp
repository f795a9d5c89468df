#pragma once
// How often each distinct row is accessed in a synthetic batch. core/reuse_hist.hpp's plan_bins picks the
// number of distinct rows D and the per-bin row numbers from a reuse histogram and the number of lookups
// N (deterministically); this module draws the counts themselves (seeded).
#include <cstdint>
#include <vector>

#include "shardplan/core/random.hpp"
#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

// One access count per distinct row, grouped by bin in bin order, summing to `lookups`: each count is
// drawn log-uniformly within its bin, then all are scaled by a common factor (clamped to their bins)
// so that the total is exact.
std::vector<int64_t> draw_access_counts(const BinPlan& plan, int64_t lookups, Rng& rng);

}  // namespace shardplan
