#pragma once
// `shard-plan calibrate` launched as a job: torchrun --nnodes N --nproc_per_node G --no-python shard-plan
// calibrate --out DIR. Every rank runs the same command. Rank 0 draws the sets and plans as a single
// calibration does (calibrate.hpp) and hands the work out through the launcher's store: compute set k of a run
// to rank k mod W, timed on that rank's own device with the job's kernel, one rank at a time (CPU ranks of one
// host share its cores, and a set timed beside another would time the contention); the all-to-alls on every
// rank at once, over a collector connection of their own (Gloo on CPU ranks, NCCL on GPUs) at the job's world
// size and host layout. Rank 0 then fits and writes the model directory; the others only measure. No LibTorch
// types here.
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/torch/calibrate.hpp"
#include "shardplan/torch/comm_benchmark.hpp"
#include "shardplan/torch/local_comm_timer.hpp"

namespace shardplan {

struct CalibrationJob {
  CommRendezvous where;       // this rank, from the launcher's variables
  int gpus_per_host = 0;      // the launcher's LOCAL_WORLD_SIZE
  LocalCommTimerConfig comm;  // the all-to-alls' protocol (repeats, rounds, timeout)
};

struct CalibrationJobOutcome {
  CalibrateOutcome calibration;  // rank 0's; empty on the others
  int64_t sets_timed = 0;        // compute sets this rank timed
};

// Runs this rank's part. Rank 0 throws what calibrate_cost_model throws (and tells the others to stop);
// a rank whose command line differs from rank 0's is refused (InputError on rank 0). The other ranks throw
// RuntimeFailure when rank 0 stops answering within the job's time (minutes, plus the collector's timeout).
CalibrationJobOutcome calibrate_as_job(const std::vector<Table>& pool, CalibrateConfig config,
                                       const CalibrationJob& job);

}  // namespace shardplan
