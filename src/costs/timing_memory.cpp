#include "shardplan/costs/timing_memory.hpp"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shardplan {

namespace {
bool g_malloc_tuned = false;
}  // namespace

void prepare_memory_for_timing() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    // No mmap'd chunks (every size comes from the heap) and no trimming (-1, as mallopt(3) documents):
    // freed pages stay mapped and are reused by the next step's tensors of the same size. The heap grows
    // in steps of kTopPad so that a step needing a little more than before does not fault page by page.
    constexpr int kTopPad = 256 << 20;
    g_malloc_tuned =
        mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1 && mallopt(M_TOP_PAD, kTopPad) == 1;
#endif
  });
}

std::string memory_policy() {
  return g_malloc_tuned ? "freed memory kept for reuse (glibc: no mmap, no trim)" : "system allocator";
}

}  // namespace shardplan
