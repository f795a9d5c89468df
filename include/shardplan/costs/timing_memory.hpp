#pragma once

#include <string>

namespace shardplan {

// Makes this process's memory behave the same in every timed step, the way device memory under a
// framework's caching allocator does. Otherwise glibc maps every large tensor (sparse gradients, pooled
// outputs) fresh with mmap and unmaps it on free, so each step paid page faults for hundreds of MiB: up
// to 5x the kernels' own time. Freed memory is now kept and reused (no mmap, no trimming). Turning
// transparent huge pages off as well was tried: the collected samples got 6% slower at the median and
// noisier, and the model worse. Idempotent; a no-op where the C library is not glibc.
void prepare_memory_for_timing();

// What prepare_memory_for_timing did, for the cost data's metadata.
std::string memory_policy();

}  // namespace shardplan
