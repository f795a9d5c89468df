#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "shardplan/core/random.hpp"

namespace shardplan {
namespace {

// Pinned outputs: mt19937_64 is fully specified by the standard, and our draws use only its raw output
// (and log/sqrt for normals), so these must hold on every platform. A change here changes every file
// the generators write.
TEST(DatasetRandom, GoldenValuesPinTheStreams) {
  Rng rng(42);
  EXPECT_EQ(rng.uniform(), 0.75515553295453897);
  EXPECT_EQ(rng.uniform(), 0.63903139385469743);
  EXPECT_EQ(rng.below(1000), 752u);
  EXPECT_EQ(rng.below(1000), 136u);
  EXPECT_NEAR(rng.normal(), 1.1185550524574781, 1e-13);
  EXPECT_NEAR(rng.normal(), -1.9066853448304657, 1e-13);
  EXPECT_EQ(derive_seed(1, 2), 17911839290282890590ull);
  Rng other(7);
  EXPECT_NEAR(other.exponential(), 0.28185202803176873, 1e-14);
}

TEST(DatasetRandom, SameSeedSameDrawsOtherSeedOtherDraws) {
  Rng a(5);
  Rng b(5);
  Rng c(6);
  int same_as_c = 0;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    same_as_c += x == c.next_u64() ? 1 : 0;
  }
  EXPECT_EQ(same_as_c, 0);
  EXPECT_NE(derive_seed(5, 1), derive_seed(5, 2));
  EXPECT_NE(derive_seed(5, 1), derive_seed(6, 1));
}

TEST(DatasetRandom, UniformAndBelowStayInRangeAndAreFlat) {
  Rng rng(1);
  std::array<int, 10> buckets{};
  double sum = 0.0;
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    double p = rng.uniform_positive();
    ASSERT_GT(p, 0.0);
    ASSERT_LE(p, 1.0);
    sum += u;
    uint64_t k = rng.below(10);
    ASSERT_LT(k, 10u);
    buckets[k] += 1;
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
  for (int count : buckets) EXPECT_NEAR(count, kDraws / 10, kDraws / 10 * 0.03);
  EXPECT_EQ(rng.below(1), 0u);
}

TEST(DatasetRandom, NormalAndExponentialHaveTheirMoments) {
  Rng rng(2);
  constexpr int kDraws = 200000;
  double sum = 0.0;
  double squares = 0.0;
  double exp_sum = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    double z = rng.normal();
    sum += z;
    squares += z * z;
    double e = rng.exponential();
    ASSERT_GE(e, 0.0);
    exp_sum += e;
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.01);
  EXPECT_NEAR(squares / kDraws, 1.0, 0.02);
  EXPECT_NEAR(exp_sum / kDraws, 1.0, 0.01);
}

TEST(DatasetRandom, ShuffleIsAPermutation) {
  Rng rng(3);
  std::vector<int> values(1000);
  for (int i = 0; i < 1000; ++i) values[i] = i;
  rng.shuffle(values);
  std::vector<int> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  int fixed = 0;
  for (int i = 0; i < 1000; ++i) fixed += values[i] == i ? 1 : 0;
  EXPECT_LT(fixed, 10);
}

}  // namespace
}  // namespace shardplan
