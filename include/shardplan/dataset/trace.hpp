#pragma once
// Synthetic index traces: one batch of pooled lookups into one table, in the (indices, offsets) form
// that fused embedding-bag kernels take. Used by the cost-data collector and by measured evaluation.
// A sequence of batches whose popular rows persist from batch to batch feeds the LRU cache simulation
// that checks the cache model (costs/cache_simulation.hpp, cost_model/cache_model.hpp).
#include <cstdint>
#include <vector>

#include "shardplan/core/random.hpp"
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

// One batch as a cache sees it: the distinct rows it touches and each one's lookups.
struct BatchRows {
  std::vector<int64_t> ids;     // distinct row ids in [0, rows)
  std::vector<int64_t> counts;  // lookups of ids[i], each >= 1; they add up to the batch's lookups
};

// Batches of one table whose popularity persists (assumption P of the cache model; docs/cost-models.md,
// "UVM caching: the miss rate"). Every batch follows trace_bin_plan(table, batch_size): the same D
// distinct rows per bin and the same access counts (drawn once, as synthesize_trace draws them), so every
// batch's reuse histogram is the plan's. Which rows carry them changes: a row of bin b >= 1 keeps its
// place (and count) in the next batch with bin_persistence(b, persistence), and is otherwise replaced by a
// uniformly drawn row; bin 0's rows (singletons) are drawn anew every batch. New rows are drawn uniformly
// from the rows the batch's kept ones leave, so persistence 0 gives independent uniform batches. Each
// batch's accesses are placed in bags as in synthesize_trace. Same table, batch size, seed and
// persistence: the same batches, on every platform.
class TraceSequence {
 public:
  // Throws InputError when batch_size < 1, the batch would exceed 1e13 lookups, or persistence is not
  // in [0, 1].
  TraceSequence(const Table& table, int64_t batch_size, uint64_t seed, double persistence);

  const BinPlan& plan() const { return plan_; }
  int64_t lookups() const { return lookups_; }
  int64_t batches_drawn() const { return drawn_; }

  // The next batch's distinct rows and their counts, without building its trace: what an LRU cache sees
  // of the batch next_trace would have returned (it costs O(D), not O(N)).
  const BatchRows& next_rows();
  // The next batch as a trace.
  IndexTrace next_trace();

 private:
  int64_t rows_ = 0;
  int64_t batch_size_ = 0;
  int64_t lookups_ = 0;
  uint64_t seed_ = 0;
  Rng rows_rng_;
  BinPlan plan_;
  int64_t singletons_ = 0;           // rows [0, singletons_) of the batch are bin 0's
  std::vector<double> persistence_;  // per row of the batch: the chance its id stays for the next
  BatchRows batch_;
  std::vector<int64_t> taken_;  // open-addressing set of the ids drawn for the current batch (-1: empty)
  std::vector<char> stays_;     // per row of the batch: whether its id stays from the last batch
  int64_t drawn_ = 0;

  bool take(int64_t id);
};

// `batches` consecutive batches of a TraceSequence (batches >= 0).
std::vector<IndexTrace> synthesize_trace_sequence(const Table& table, int64_t batch_size, int batches, uint64_t seed,
                                                  double persistence);

}  // namespace shardplan
