// parallel_for keeps worker threads between calls; these check that every call still runs each index
// once, returns only when all are done, and never waits on itself.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "shardplan/search/parallel_for.hpp"

namespace shardplan {
namespace {

std::vector<int> visits(int n, int threads) {
  std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
  parallel_for(n, threads, [&](int i) { seen[static_cast<std::size_t>(i)]++; });
  std::vector<int> out;
  for (auto& s : seen) out.push_back(s.load());
  return out;
}

TEST(ParallelFor, RunsEveryIndexOnceForAnyThreadCount) {
  for (int threads : {0, 1, 2, 3, 8}) {
    for (int n : {0, 1, 2, 7, 1000}) {
      EXPECT_EQ(visits(n, threads), std::vector<int>(static_cast<std::size_t>(n), 1)) << n << " on " << threads;
    }
  }
}

TEST(ParallelFor, ManyShortCallsInARowAllComplete) {
  // The search's pattern: thousands of calls, each a few items; a lost wake-up would hang here.
  int64_t total = 0;
  for (int call = 0; call < 3000; ++call) {
    std::vector<int> slot(3, 0);
    parallel_for(3, 3, [&](int i) { slot[static_cast<std::size_t>(i)] = i + 1; });
    total += slot[0] + slot[1] + slot[2];
  }
  EXPECT_EQ(total, 3000 * 6);
}

TEST(ParallelFor, NestedCallsDoNotWaitOnThemselves) {
  std::atomic<int> inner{0};
  parallel_for(4, 4, [&](int) { parallel_for(5, 3, [&](int) { inner++; }); });
  EXPECT_EQ(inner.load(), 20);
}

TEST(ParallelFor, CallsFromSeveralThreadsAtOnceAllComplete) {
  std::vector<std::thread> callers;
  std::atomic<int> sum{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int k = 0; k < 200; ++k) parallel_for(6, 3, [&](int i) { sum += i; });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), 4 * 200 * 15);
}

TEST(ParallelFor, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  EXPECT_THROW(parallel_for(100, 3,
                            [](int i) {
                              if (i == 42) throw std::runtime_error("item 42");
                            }),
               std::runtime_error);
  EXPECT_EQ(visits(50, 3), std::vector<int>(50, 1));
}

}  // namespace
}  // namespace shardplan
