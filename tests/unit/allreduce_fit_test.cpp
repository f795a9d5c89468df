// The measured all-reduce fit: offset and scale on the ring structure per world size.
#include <gtest/gtest.h>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/allreduce_fit.hpp"

namespace shardplan {
namespace {

CommFabric one_host(int devices) {
  CommFabric f;
  f.name = "test";
  f.devices_per_host = devices;
  f.intra_bytes_per_ms = 1000.0;
  f.intra_peer_latency_ms = 0.1;
  f.inter_bytes_per_ms = 1000.0;
  f.inter_peer_latency_ms = 0.1;
  f.batch_size = 16;
  return f;
}

// The ring on `devices` ranks of one host with the given step latency and bus rate.
CommFabric ring(int devices, double latency_ms, double bytes_per_ms) {
  CommFabric f = one_host(devices);
  f.intra_peer_latency_ms = latency_ms;
  f.intra_bytes_per_ms = bytes_per_ms;
  return f;
}

// A sample whose ranks measured `truth` ms for `floats`, spread around it.
CommSample sample(int world_size, int64_t floats, double truth) {
  CommSample s;
  s.world_size = world_size;
  s.dim_sums.assign(static_cast<std::size_t>(world_size), 4);
  s.delays_ms.assign(static_cast<std::size_t>(world_size), 0.0);
  s.fw_ms = s.delays_ms;
  s.bw_ms = s.delays_ms;
  s.allreduce_floats = floats;
  for (int r = 0; r < world_size; ++r) s.allreduce_ms.push_back(truth * (r % 2 == 0 ? 0.9 : 1.1));
  return s;
}

CommSample ring_sample(int world_size, int64_t floats, double latency_ms, double bytes_per_ms) {
  return sample(
      world_size, floats,
      ring_allreduce_ms(ring(world_size, latency_ms, bytes_per_ms), 4.0 * static_cast<double>(floats), world_size));
}

TEST(AllreduceFit, RecoversTheRingsLatencyAndRatePerWorldSize) {
  std::vector<CommSample> samples;
  for (int64_t floats : {1000, 10000, 100000, 1000000}) {
    samples.push_back(ring_sample(2, floats, 0.05, 2000.0));
    samples.push_back(ring_sample(4, floats, 1.0, 500.0));
  }
  CommSample plain = sample(4, 100, 1.0);  // no all-reduce: ignored
  plain.allreduce_floats = 0;
  plain.allreduce_ms.clear();
  samples.push_back(plain);
  AllreduceFit fit = fit_allreduce(samples);
  ASSERT_EQ(fit.points.size(), 2u);
  EXPECT_EQ(fit.points[0].world_size, 2);
  EXPECT_EQ(fit.points[0].samples, 4);
  EXPECT_NEAR(fit.points[0].step_latency_ms, 0.05, 1e-9);
  EXPECT_NEAR(fit.points[0].bus_bytes_per_ms, 2000.0, 1e-6);
  EXPECT_NEAR(fit.points[1].step_latency_ms, 1.0, 1e-9);
  EXPECT_NEAR(fit.points[1].bus_bytes_per_ms, 500.0, 1e-6);
  EXPECT_TRUE(fit_allreduce({plain}).points.empty());
}

TEST(AllreduceFit, OtherWorldSizesTakeTheNearestMeasuredBelow) {
  AllreduceFit fit;
  fit.points = {{2, 0.05, 2000.0, 4}, {8, 1.0, 500.0, 4}};
  CommFabric f = one_host(64);
  f.host_bytes_per_ms = 1.0;  // the measured figures stand for the shared fabric too: not applied
  const double bytes = 4e6;
  EXPECT_DOUBLE_EQ(fitted_allreduce_ms(fit, f, bytes, 2), ring_allreduce_ms(ring(64, 0.05, 2000.0), bytes, 2));
  EXPECT_DOUBLE_EQ(fitted_allreduce_ms(fit, f, bytes, 4), ring_allreduce_ms(ring(64, 0.05, 2000.0), bytes, 4));
  EXPECT_DOUBLE_EQ(fitted_allreduce_ms(fit, f, bytes, 64), ring_allreduce_ms(ring(64, 1.0, 500.0), bytes, 64));
  EXPECT_DOUBLE_EQ(fitted_allreduce_ms(AllreduceFit{}, f, bytes, 64), ring_allreduce_ms(f, bytes, 64));
  // Past one host the network's figures still bound the measured ones.
  CommFabric hosts = one_host(8);
  hosts.inter_bytes_per_ms = 100.0;
  hosts.inter_peer_latency_ms = 5.0;
  EXPECT_GT(fitted_allreduce_ms(fit, hosts, bytes, 16), ring_allreduce_ms(ring(64, 1.0, 500.0), bytes, 16));
  EXPECT_EQ(fitted_allreduce_ms(fit, f, bytes, 1), 0.0);  // one device: nothing to all-reduce
  EXPECT_EQ(fitted_allreduce_ms(fit, f, 0.0, 8), 0.0);
  // More bytes never cost less, at any world size.
  for (int w : {2, 3, 8, 100}) {
    double previous = 0.0;
    for (double b = 1e3; b < 1e10; b *= 3.0) {
      const double ms = fitted_allreduce_ms(fit, f, b, w);
      EXPECT_GE(ms, previous) << w << " " << b;
      previous = ms;
    }
  }
}

// Latency cannot go negative: data whose line would cross below zero gets the best line through the origin.
TEST(AllreduceFit, NegativeLatencyIsRefused) {
  std::vector<CommSample> samples;
  for (int64_t floats : {10000, 100000, 1000000}) samples.push_back(sample(2, floats, 4e-6 * floats - 0.03));
  AllreduceFit fit = fit_allreduce(samples);
  ASSERT_EQ(fit.points.size(), 1u);
  EXPECT_EQ(fit.points[0].step_latency_ms, 0.0);
  EXPECT_GT(fit.points[0].bus_bytes_per_ms, 0.0);
}

// Times that fall with bytes, or one size only: the edge that errs less, never a latency thrown away.
TEST(AllreduceFit, FlatOrSingleSizeDataKeepTheirLatency) {
  std::vector<CommSample> falling;
  for (auto [floats, ms] : {std::pair<int64_t, double>{1000, 10.0}, {100000, 9.0}, {1000000, 8.0}}) {
    falling.push_back(sample(8, floats, ms));
  }
  AllreduceFit fit = fit_allreduce(falling);
  ASSERT_EQ(fit.points.size(), 1u);
  EXPECT_GT(fit.points[0].step_latency_ms * 14.0, 8.0);  // about the times measured, from latency alone
  EXPECT_GT(fit.points[0].bus_bytes_per_ms, 0.0);
  const double small = fitted_allreduce_ms(fit, one_host(8), 4.0, 8);
  EXPECT_GT(small, 8.0);
  EXPECT_LT(small, 10.0);

  AllreduceFit single = fit_allreduce({sample(4, 5000, 2.0), sample(4, 5000, 2.2)});
  ASSERT_EQ(single.points.size(), 1u);
  EXPECT_NEAR(fitted_allreduce_ms(single, one_host(4), 20000.0, 4), 2.1, 0.15);
}

TEST(AllreduceFit, JsonRoundTripAndErrorsNameTheField) {
  AllreduceFit fit;
  fit.points = {{2, 0.25, 1500.0, 40}, {8, 1.0, 1200.0, 40}};
  AllreduceFit back = allreduce_fit_from_json(allreduce_fit_to_json(fit), "meta.json", "comm.allreduce");
  ASSERT_EQ(back.points.size(), 2u);
  EXPECT_EQ(back.points[1].world_size, 8);
  EXPECT_NEAR(back.points[1].step_latency_ms, 1.0, 1e-12);
  EXPECT_NEAR(back.points[0].bus_bytes_per_ms, 1500.0, 1e-9);
  EXPECT_EQ(back.points[0].samples, 40);
  nlohmann::json bad = allreduce_fit_to_json(fit);
  bad["fits"][1]["bus_bandwidth_GBps"] = 0.0;
  try {
    allreduce_fit_from_json(bad, "meta.json", "comm.allreduce");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("comm.allreduce.fits[1].bus_bandwidth_GBps"), std::string::npos) << e.what();
  }
  bad = allreduce_fit_to_json(fit);
  bad["fits"][1]["world_size"] = 2;
  EXPECT_THROW(allreduce_fit_from_json(bad, "meta.json", "comm.allreduce"), InputError);
}

}  // namespace
}  // namespace shardplan
