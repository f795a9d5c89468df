#pragma once

#include <string>

namespace shardplan {

// Makes the C allocator keep freed memory for reuse, the way a training framework's caching allocator
// (CUDA's in PyTorch) does. Without it glibc maps every large tensor (sparse gradients, pooled outputs)
// fresh with mmap and unmaps it on free, so each timed step pays page faults for hundreds of MiB: on this
// CPU that cost was up to 5x the kernels' own time and bimodal between runs. Idempotent; a no-op where
// the C library is not glibc.
void keep_freed_memory_for_reuse();

// What keep_freed_memory_for_reuse did, for the cost data's metadata.
std::string allocator_policy();

}  // namespace shardplan
