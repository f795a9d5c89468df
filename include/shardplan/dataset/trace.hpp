#pragma once
// Synthetic index traces: one batch of pooled lookups into one table, in the (indices, offsets) form
// that fused embedding-bag kernels take. Used by the cost-data collector and by measured evaluation.
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/dataset/access_counts.hpp"

namespace shardplan {

struct IndexTrace {
  std::vector<int64_t> indices;  // row ids in [0, rows)
  std::vector<int64_t> offsets;  // batch_size + 1 entries: bag i is indices[offsets[i], offsets[i+1])
};

// Lookups a batch of `batch_size` samples makes into `table`: round(batch_size * pooling_factor).
int64_t trace_lookups(const Table& table, int64_t batch_size);

// The bins a trace of `table` at `batch_size` fills (what synthesize_trace follows; its histogram is
// exactly the trace's reuse histogram). Deterministic: independent of the seed.
BinPlan trace_bin_plan(const Table& table, int64_t batch_size);

// A batch for `table`: trace_lookups(table, batch_size) indices, so the mean bag length is the pooling
// factor; the reuse histogram (shardplan::reuse_histogram of the indices) is the table's histogram
// (its default when it has none) whenever trace_bin_plan says it is realisable, up to apportioning D
// distinct rows over 17 bins (exact for a histogram of the form k_b / D). Bag lengths vary (see
// docs/dataset.md); the distinct rows are spread uniformly over [0, rows) and every access is placed in
// a uniformly random bag. Same table, batch size and seed: same trace, on every platform.
// Throws InputError when batch_size < 1 or the batch would exceed 1e13 lookups.
IndexTrace synthesize_trace(const Table& table, int64_t batch_size, uint64_t seed);

}  // namespace shardplan
