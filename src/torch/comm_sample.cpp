#include "comm_sample.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "shardplan/core/median.hpp"

namespace shardplan::collector {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Row-wise tables' forward: each rank holds partial pooled sums of the whole batch (world x local_batch x
// rw_dim) and ends with the sums of its own samples (local_batch x rw_dim). NCCL reduce-scatters; Gloo in
// this LibTorch has no reduce_scatter, so it is the direct algorithm, the same bytes on the wire: an
// all-to-all of equal blocks and a sum of the blocks received.
// Table-row-wise tables do the same among their host's ranks (`group` of `size` ranks).
void reduce_scatter_rows(const Job& job, CollectiveGroup& group, int size, at::Tensor& partial, at::Tensor& received,
                         at::Tensor& mine) {
  if (job.cuda) {
    job.finish(group._reduce_scatter_base(mine, partial));
    return;
  }
  std::vector<int64_t> counts(static_cast<std::size_t>(size), mine.numel());
  std::vector<int64_t> recv_counts = counts;
  job.finish(group.alltoall_base(received, partial, recv_counts, counts));
  at::sum_out(mine, received.view({size, mine.numel()}), {0});
}

// Their backward: every rank's gradients for its samples go to every rank (all-gather).
void all_gather_rows(const Job& job, CollectiveGroup& group, int size, at::Tensor& mine, at::Tensor& gathered) {
  if (job.cuda) {
    job.finish(group._allgather_base(gathered, mine));
    return;
  }
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < size; ++r) outputs[0].push_back(gathered.narrow(0, r * mine.numel(), mine.numel()));
  std::vector<at::Tensor> inputs{mine};
  job.finish(group.allgather(outputs, inputs));
}

// Row-wise sums within a group of ranks: the world's (row-wise tables) or this rank's host's (table-row-wise
// tables). Each rank holds partial sums of every sample (size x `floats`, with as much scratch after them)
// and ends with its own `floats`.
struct RowSums {
  CollectiveGroup* group = nullptr;
  int size = 0;
  int64_t floats = 0;  // this rank's share; 0: the group has nothing to sum
  at::Tensor partials;
  at::Tensor mine;

  // The forward: partial sums reduce-scattered to their owners.
  void reduce_scatter(const Job& job) {
    if (floats <= 0) return;
    at::Tensor partial = partials.narrow(0, 0, size * floats);
    at::Tensor scratch = partials.narrow(0, size * floats, size * floats);
    reduce_scatter_rows(job, *group, size, partial, scratch, mine);
  }
  // The backward: every rank's gradients for its samples all-gathered.
  void all_gather(const Job& job) {
    if (floats <= 0) return;
    at::Tensor gathered = partials.narrow(0, 0, size * floats);
    all_gather_rows(job, *group, size, mine, gathered);
  }
};

// A sample's tensors on this rank, taken from the buffers before the clock starts (growing one allocates
// and fills it), and the all-to-all's split sizes.
struct SampleTensors {
  std::vector<int64_t> fw_send;  // floats to each rank in the forward
  std::vector<int64_t> fw_recv;  // floats from each rank
  at::Tensor embeddings;
  at::Tensor received;
  RowSums world_rows;  // row-wise tables; its partials also hold the replicas' gradients
  RowSums host_rows;   // table-row-wise tables
};

SampleTensors sample_tensors(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch) {
  SampleTensors t;
  const auto self = static_cast<std::size_t>(job.rank);
  t.fw_send.assign(static_cast<std::size_t>(job.world), local_batch * w.dim_sums[self]);
  for (int64_t dim_sum : w.dim_sums) t.fw_recv.push_back(local_batch * dim_sum);
  int64_t send_total = 0;
  int64_t recv_total = 0;
  for (std::size_t i = 0; i < t.fw_send.size(); ++i) {
    send_total += t.fw_send[i];
    recv_total += t.fw_recv[i];
  }
  t.embeddings = buffers.sent(send_total);
  t.received = buffers.received(recv_total);
  const int64_t rw_floats = local_batch * w.rw_dim;
  t.world_rows = {job.group.get(), job.world, rw_floats,
                  buffers.row_partials(std::max(2 * job.world * rw_floats, w.allreduce_floats)),
                  buffers.row_sums(rw_floats)};
  // The host's table-row-wise partial sums cover every sample (world x local_batch); each of its ranks
  // ends with 1/host_size of them, which the all-to-all then sends to their owners.
  const int64_t host_dim = w.host_rw_dims.empty() ? 0 : w.host_rw_dims[self];
  const int64_t host_floats = job.host_size > 0 ? job.world / job.host_size * local_batch * host_dim : 0;
  t.host_rows = {job.host_group.get(), job.host_size, host_floats,
                 buffers.host_row_partials(2 * job.host_size * host_floats), buffers.host_row_sums(host_floats)};
  return t;
}

// The forward: the all-to-all of pooled embeddings, then the row-wise reduce-scatters.
void forward(const Job& job, SampleTensors& t) {
  // alltoall_base takes the split sizes by reference and moves from them (c10d 1.13): pass copies.
  std::vector<int64_t> recv_counts = t.fw_recv;
  std::vector<int64_t> send_counts = t.fw_send;
  job.finish(job.group->alltoall_base(t.received, t.embeddings, recv_counts, send_counts));
  t.world_rows.reduce_scatter(job);
  t.host_rows.reduce_scatter(job);
}

// The backward: the gradients of what this rank received go back to their owners (send fw_recv, receive
// fw_send), then the row-wise all-gathers.
void backward(const Job& job, SampleTensors& t) {
  std::vector<int64_t> recv_counts = t.fw_send;
  std::vector<int64_t> send_counts = t.fw_recv;
  job.finish(job.group->alltoall_base(t.embeddings, t.received, recv_counts, send_counts));
  t.world_rows.all_gather(job);
  t.host_rows.all_gather(job);
}

// DDP all-reduces the replicas' gradients once the backward is done; timed from a common start.
double allreduce_ms(const Job& job, const SampleTensors& t, int64_t floats) {
  at::Tensor gradients = t.world_rows.partials.narrow(0, 0, floats);
  job.finish(job.group->barrier());
  const auto start = Clock::now();
  std::vector<at::Tensor> tensors{gradients};
  job.finish(job.group->allreduce(tensors));
  return ms_since(start);
}

}  // namespace

at::Tensor Buffers::take(at::Tensor& buffer, int64_t count) {
  if (!buffer.defined() || buffer.numel() < count) buffer = at::ones({std::max<int64_t>(count, 1)}, options_);
  return buffer.narrow(0, 0, count);
}

Timing run_sample(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, bool timed) {
  SampleTensors t = sample_tensors(job, buffers, w, local_batch);
  const auto self = static_cast<std::size_t>(job.rank);
  Timing timing;
  auto released = Clock::now();
  if (timed && w.delays_ms[self] > 0.0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(w.delays_ms[self]));
  }
  auto start = Clock::now();
  timing.delay_ms = std::chrono::duration<double, std::milli>(start - released).count();
  forward(job, t);
  timing.fw_ms = ms_since(start);

  job.finish(job.group->barrier());
  start = Clock::now();
  backward(job, t);
  timing.bw_ms = ms_since(start);

  if (w.allreduce_floats > 0) timing.allreduce_ms = allreduce_ms(job, t, w.allreduce_floats);
  return timing;
}

Timing run_sample_repeated(const Job& job, Buffers& buffers, const CommWorkload& w, int64_t local_batch, int repeats) {
  std::vector<double> delays, fw, bw, allreduce;
  for (int i = 0; i < repeats; ++i) {
    if (i > 0) job.finish(job.group->barrier());
    Timing t = run_sample(job, buffers, w, local_batch, /*timed=*/true);
    delays.push_back(t.delay_ms);
    fw.push_back(t.fw_ms);
    bw.push_back(t.bw_ms);
    allreduce.push_back(t.allreduce_ms);
  }
  return Timing{median(delays), median(fw), median(bw), median(allreduce)};
}

std::vector<Timing> gather_timings(const Job& job, const Timing& mine) {
  std::vector<at::Tensor> input{at::tensor({mine.delay_ms, mine.fw_ms, mine.bw_ms, mine.allreduce_ms}, at::kDouble)
                                    .to(job.double_options.device())};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < job.world; ++r) output[0].push_back(at::empty({4}, job.double_options));
  job.finish(job.group->allgather(output, input));
  std::vector<Timing> all;
  for (const auto& t : output[0]) {
    at::Tensor cpu = t.cpu();
    const double* v = cpu.data_ptr<double>();
    all.push_back(Timing{v[0], v[1], v[2], v[3]});
  }
  return all;
}

}  // namespace shardplan::collector
