#pragma once
// Runs fn(i) for i in [0, n) on up to `threads` threads. Callers write results into slot i, so the
// outcome does not depend on the thread count or on scheduling.
#include <functional>

namespace shardplan {

// 0 threads: every core the machine reports.
int resolve_threads(int threads);

void parallel_for(int n, int threads, const std::function<void(int)>& fn);

}  // namespace shardplan
