#pragma once
// The collector's timing: one sample's collectives on this rank (the forward all-to-all of pooled
// embeddings, the backward one of their gradients, given workloads' row-wise and data-parallel
// collectives), repeated, and every rank's timings gathered.
#include <cstdint>
#include <vector>

#include "c10d_job.hpp"
#include "shardplan/costs/comm_workload.hpp"

namespace shardplan::collector {

// Reusable buffers that only grow, filled once, so no allocation or first-touch page fault happens inside
// a timed collective. One per role: the pooled embeddings this rank sends, those it receives, the
// row-wise partial sums with their scratch (also the replicas' gradients), this rank's row-wise sums, and
// the same two for table-row-wise tables within the host (check_given_comm_workloads bounds them).
class Buffers {
 public:
  explicit Buffers(const at::TensorOptions& options) : options_(options) {}
  at::Tensor sent(int64_t count) { return take(sent_, count); }
  at::Tensor received(int64_t count) { return take(received_, count); }
  at::Tensor row_partials(int64_t count) { return take(row_partials_, count); }
  at::Tensor row_sums(int64_t count) { return take(row_sums_, count); }
  at::Tensor host_row_partials(int64_t count) { return take(host_row_partials_, count); }
  at::Tensor host_row_sums(int64_t count) { return take(host_row_sums_, count); }

 private:
  at::Tensor take(at::Tensor& buffer, int64_t count);
  at::TensorOptions options_;
  at::Tensor sent_;
  at::Tensor received_;
  at::Tensor row_partials_;
  at::Tensor row_sums_;
  at::Tensor host_row_partials_;
  at::Tensor host_row_sums_;
};

// One rank's times of one sample, in ms.
struct Timing {
  double delay_ms = 0.0;
  double fw_ms = 0.0;
  double bw_ms = 0.0;
  double allreduce_ms = 0.0;
};

// One sample on this rank. Forward: this rank sends each rank j the rows of j's B/W samples of its own
// pooled embeddings ((B/W) x w_self floats) and receives (B/W) x w_i from each rank i. Backward sends
// the gradients back: the same blocks in the other direction. Untimed (warm-up): no start delay.
Timing run_sample(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, bool timed);

// The sample run `repeats` times, each after a barrier so that every run's delays start together; the
// per-rank medians damp the scheduling noise of many ranks sharing few cores.
Timing run_sample_repeated(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, int repeats);

// Every rank's timing at every rank (rank 0 writes them), in rank order.
std::vector<Timing> gather_timings(const Job& job, const Timing& mine);

}  // namespace shardplan::collector
