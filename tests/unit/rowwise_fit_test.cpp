// The row-wise collectives' fit: pairs of samples, a line per world size, its reach beyond the data.
#include <gtest/gtest.h>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/rowwise_fit.hpp"

namespace shardplan {
namespace {

// A sample whose every rank measured `fw` and `bw`.
CommSample sample(std::vector<int64_t> widths, int64_t rw_dim, double fw, double bw) {
  CommSample s;
  s.world_size = static_cast<int>(widths.size());
  s.dim_sums = std::move(widths);
  s.delays_ms.assign(s.dim_sums.size(), 0.0);
  s.fw_ms.assign(s.dim_sums.size(), fw);
  s.bw_ms.assign(s.dim_sums.size(), bw);
  s.rw_dim = rw_dim;
  return s;
}

// Each row-wise sample meets the sample given next to it that carries its width in the all-to-all.
TEST(RowwiseFit, PairsEachRowWiseSampleWithItsNeighbour) {
  std::vector<CommSample> samples = {
      sample({4, 8}, 16, 2.0, 3.0),                                  // pairs with the next one
      sample({20, 24}, 0, 1.5, 1.5), sample({20, 24}, 0, 2.0, 2.0),  // the same widths, but not its neighbour
      sample({8, 8}, 16, 5.0, 5.0),                                  // no neighbour with {24, 24}
      sample({4, 8}, 0, 1.0, 1.0),   sample({36, 24}, 0, 9.0, 9.0),  // pairs with the next one, given after it
      sample({20, 8}, 16, 4.0, 4.0), sample({20, 8}, 16, 4.0, 4.0),  // its neighbours are taken or row-wise: no partner
      sample({12, 12}, 8, 4.0, 4.0), sample({20, 20}, 0, 1.0, 1.0),  // its ranks started 2 ms apart: no partner
  };
  samples.back().delays_ms = {0.0, 2.0};
  std::vector<char> is_reference;
  const auto pairs = rowwise_pairs(samples, &is_reference);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].world_size, 2);
  EXPECT_EQ(pairs[0].rw_dim, 16);
  EXPECT_DOUBLE_EQ(pairs[0].extra_ms, 5.0 - 3.0);
  EXPECT_DOUBLE_EQ(pairs[1].extra_ms, 8.0 - 18.0);
  EXPECT_EQ(is_reference, (std::vector<char>{0, 1, 0, 0, 0, 1, 0, 0, 0, 0}));
  // Ranks on other hosts are another layout: no partner.
  samples[1].devices_per_host = 1;
  EXPECT_EQ(rowwise_pairs(samples).size(), 1u);
}

TEST(RowwiseFit, FitsALinePerWorldSizeAndCarriesItToOtherSizes) {
  std::vector<RowwisePair> pairs;
  for (int64_t dim : {4, 16, 64, 256}) {
    pairs.push_back({4, dim, 3.0 + 0.01 * static_cast<double>(dim)});
    pairs.push_back({8, dim, 14.0});  // flat: no growth with width
  }
  const RowwiseFit fit = fit_rowwise(pairs);
  ASSERT_EQ(fit.points.size(), 2u);
  EXPECT_NEAR(fit.points[0].latency_ms, 3.0, 1e-9);
  EXPECT_NEAR(fit.points[0].ms_per_column, 0.01, 1e-12);
  EXPECT_EQ(fit.points[0].pairs, 4);
  EXPECT_NEAR(fit.points[1].latency_ms, 14.0, 1e-9);
  EXPECT_NEAR(fit.points[1].ms_per_column, 0.0, 1e-12);
  EXPECT_NEAR(fitted_rowwise_ms(fit, 100, 4), 4.0, 1e-9);
  EXPECT_NEAR(fitted_rowwise_ms(fit, 100, 6), 8.5 + 0.005 * 100, 1e-9);  // W = 6: halfway between W = 4 and 8
  EXPECT_NEAR(fitted_rowwise_ms(fit, 100, 64), 14.0 * 63 / 7, 1e-9);     // beyond the data: W = 8's
  EXPECT_NEAR(fitted_rowwise_ms(fit, 100, 2), 3.0 / 3 + 1.0, 1e-9);      // below it: the smallest's
  EXPECT_EQ(fitted_rowwise_ms(fit, 100, 1), 0.0);
  EXPECT_EQ(fitted_rowwise_ms(fit, 0, 8), 0.0);
}

// One pair slowed by a stray process does not move the line: it is the least absolute deviations one.
TEST(RowwiseFit, IgnoresAnOutlier) {
  std::vector<RowwisePair> pairs;
  for (int64_t dim : {4, 8, 16, 32, 64, 128, 256}) pairs.push_back({4, dim, 2.0 + 0.01 * static_cast<double>(dim)});
  pairs.push_back({4, 16, 40.0});
  const RowwiseFit fit = fit_rowwise(pairs);
  EXPECT_NEAR(fit.points[0].latency_ms, 2.0, 1e-9);
  EXPECT_NEAR(fit.points[0].ms_per_column, 0.01, 1e-12);
}

// Noise can make the free line fall with width or start below zero: the fit stays non-negative.
TEST(RowwiseFit, StaysNonNegative) {
  const RowwiseFit falling = fit_rowwise({{2, 4, 2.0}, {2, 200, 1.5}, {2, 400, 1.0}});
  EXPECT_EQ(falling.points[0].ms_per_column, 0.0);
  EXPECT_NEAR(falling.points[0].latency_ms, 1.5, 1e-12);
  const RowwiseFit below = fit_rowwise({{2, 100, 0.5}, {2, 200, 2.5}});
  EXPECT_EQ(below.points[0].latency_ms, 0.0);
  EXPECT_GT(below.points[0].ms_per_column, 0.0);
  const RowwiseFit negative = fit_rowwise({{2, 100, -1.0}});
  EXPECT_EQ(negative.points[0].latency_ms, 0.0);
  EXPECT_EQ(negative.points[0].ms_per_column, 0.0);
}

TEST(RowwiseFit, RoundTripsThroughJsonAndNamesBadFields) {
  RowwiseFit fit;
  fit.points = {{2, 0.5, 0.001, 10}, {8, 14.0, 0.0, 12}};
  const RowwiseFit back = rowwise_fit_from_json(rowwise_fit_to_json(fit), "meta.json", "comm.rowwise");
  ASSERT_EQ(back.points.size(), 2u);
  EXPECT_EQ(back.points[1].world_size, 8);
  EXPECT_DOUBLE_EQ(back.points[0].ms_per_column, 0.001);
  EXPECT_EQ(back.points[1].pairs, 12);
  nlohmann::json bad = rowwise_fit_to_json(fit);
  bad["fits"][1]["latency_ms"] = -1.0;
  try {
    rowwise_fit_from_json(bad, "meta.json", "comm.rowwise");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("comm.rowwise.fits[1].latency_ms"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardplan
