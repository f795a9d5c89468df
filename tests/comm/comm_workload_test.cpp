// The all-to-all workload generator: deterministic, within its documented ranges, and varied enough
// (imbalance, zero-delay samples) to train a communication model on.
#include "shardplan/costs/comm_workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/core/errors.hpp"

namespace shardplan {
namespace {

CommWorkloadConfig config_for(int world_size) {
  CommWorkloadConfig config;
  config.world_size = world_size;
  return config;
}

TEST(CommWorkload, SameSeedAndIndexGiveTheSameSample) {
  auto config = config_for(8);
  for (int64_t index : {0, 1, 999}) {
    CommWorkload a = draw_comm_workload(config, 42, index);
    CommWorkload b = draw_comm_workload(config, 42, index);
    EXPECT_EQ(a.dim_sums, b.dim_sums);
    EXPECT_EQ(a.delays_ms, b.delays_ms);
    EXPECT_EQ(a.imbalance, b.imbalance);
  }
  EXPECT_NE(draw_comm_workload(config, 42, 0).dim_sums, draw_comm_workload(config, 42, 1).dim_sums);
  EXPECT_NE(draw_comm_workload(config, 42, 0).dim_sums, draw_comm_workload(config, 43, 0).dim_sums);
}

// Pinned values: the generator uses only std::mt19937_64 and exact arithmetic, so these hold on every
// platform; a change here changes what "comm-workload/1" means and needs a new scheme name.
TEST(CommWorkload, PinnedSampleIsStableAcrossPlatforms) {
  CommWorkload w = draw_comm_workload(config_for(4), 1, 1);
  EXPECT_EQ(w.dim_sums, (std::vector<int64_t>{1332, 280, 152, 1804}));
  EXPECT_EQ(w.shard_counts, (std::vector<int>{18, 4, 4, 25}));
  EXPECT_DOUBLE_EQ(w.delays_ms[0], 2.2028296479274365);
  EXPECT_DOUBLE_EQ(w.delays_ms[3], 1.4167155768578168);
  EXPECT_EQ(draw_comm_workload(config_for(4), 1, 2).delays_ms, (std::vector<double>{0, 0, 0, 0}));
}

TEST(CommWorkload, WidthsAndDelaysStayInTheirRanges) {
  auto config = config_for(4);
  const int cap = config.max_mean_shards * config.max_skew;
  EXPECT_EQ(max_comm_dim_sum(config), cap * 128);
  for (int64_t index = 0; index < 2000; ++index) {
    CommWorkload w = draw_comm_workload(config, 7, index);
    ASSERT_EQ(w.dim_sums.size(), 4u);
    ASSERT_EQ(w.delays_ms.size(), 4u);
    EXPECT_GE(w.imbalance, 0.0);
    EXPECT_LT(w.imbalance, 1.0);
    for (std::size_t r = 0; r < 4; ++r) {
      EXPECT_GE(w.shard_counts[r], 1);
      EXPECT_LE(w.shard_counts[r], cap);
      EXPECT_EQ(w.dim_sums[r] % 4, 0);
      EXPECT_GE(w.dim_sums[r], 4 * w.shard_counts[r]);
      EXPECT_LE(w.dim_sums[r], 128 * w.shard_counts[r]);
      EXPECT_GE(w.delays_ms[r], 0.0);
      EXPECT_LE(w.delays_ms[r], config.max_delay_ms);
    }
  }
}

TEST(CommWorkload, CoversBalancedSkewedAndUndelayedSamples) {
  auto config = config_for(8);
  int undelayed = 0;
  int skewed = 0;  // largest width sum at least 4x the smallest
  const int n = 4000;
  for (int64_t index = 0; index < n; ++index) {
    CommWorkload w = draw_comm_workload(config, 3, index);
    bool all_zero = std::all_of(w.delays_ms.begin(), w.delays_ms.end(), [](double d) { return d == 0.0; });
    undelayed += all_zero ? 1 : 0;
    auto [low, high] = std::minmax_element(w.dim_sums.begin(), w.dim_sums.end());
    skewed += *high >= 4 * *low ? 1 : 0;
  }
  // About zero_delay_fraction (0.2) of the samples have no delays.
  EXPECT_NEAR(static_cast<double>(undelayed) / n, config.zero_delay_fraction, 0.03);
  EXPECT_GT(skewed, n / 10);
  EXPECT_LT(skewed, n * 9 / 10);
}

TEST(CommWorkload, ZeroMaxDelayMeansNoDelays) {
  auto config = config_for(2);
  config.max_delay_ms = 0.0;
  for (int64_t index = 0; index < 200; ++index) {
    CommWorkload w = draw_comm_workload(config, 5, index);
    EXPECT_EQ(w.delays_ms, (std::vector<double>{0.0, 0.0}));
  }
}

TEST(CommWorkload, InvalidSettingsNameTheirSetting) {
  auto expect_error = [](CommWorkloadConfig config, const std::string& flag) {
    try {
      validate_comm_workload(config);
      ADD_FAILURE() << "accepted a bad " << flag;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  // The library's terms; the CLI names the flags (SettingError).
  expect_error(config_for(1), "world size: must be in [2, ");
  expect_error(config_for(0), "world size");
  auto negative_delay = config_for(2);
  negative_delay.max_delay_ms = -1.0;
  expect_error(negative_delay, "maximum delay: must be in [0, ");
  EXPECT_NO_THROW(validate_comm_workload(config_for(2)));
}

TEST(CommWorkloads, GivenListRoundTripsThroughItsFile) {
  std::vector<CommWorkload> given(2);
  given[0].dim_sums = {400, 0, 128};
  given[0].delays_ms = {0.0, 1.25, 3.5};
  given[1].dim_sums = {8, 16, 24};
  given[1].delays_ms = {0.0, 0.0, 0.0};
  int world_size = 0;
  std::vector<CommWorkload> back = comm_workloads_from_json(comm_workloads_to_json(3, given), "w.json", world_size);
  EXPECT_EQ(world_size, 3);
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].dim_sums, given[i].dim_sums);
    EXPECT_EQ(back[i].delays_ms, given[i].delays_ms);
  }
  EXPECT_EQ(comm_workloads_digest(back), comm_workloads_digest(given));
  back[1].delays_ms[2] = 0.5;
  EXPECT_NE(comm_workloads_digest(back), comm_workloads_digest(given));
}

// A plan's row-wise width and all-reduce are optional fields; without them the file and digest are as before.
TEST(CommWorkloads, PlanCollectivesAreOptionalFields) {
  std::vector<CommWorkload> given(1);
  given[0].dim_sums = {8, 16};
  given[0].delays_ms = {0.0, 1.0};
  const uint64_t plain_digest = comm_workloads_digest(given);
  EXPECT_FALSE(comm_workloads_to_json(2, given)["workloads"][0].contains("rw_dim"));
  given[0].rw_dim = 40;
  given[0].allreduce_floats = 4096;
  int world_size = 0;
  std::vector<CommWorkload> back = comm_workloads_from_json(comm_workloads_to_json(2, given), "w.json", world_size);
  EXPECT_EQ(back[0].rw_dim, 40);
  EXPECT_EQ(back[0].allreduce_floats, 4096);
  EXPECT_NE(comm_workloads_digest(back), plain_digest);
  nlohmann::json doc = comm_workloads_to_json(2, given);
  doc["workloads"][0]["rw_dim"] = -4;
  try {
    comm_workloads_from_json(doc, "w.json", world_size);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workloads[0].rw_dim"), std::string::npos) << e.what();
  }
  // Each host's table-row-wise width, per rank.
  const uint64_t without_hosts = comm_workloads_digest(given);
  EXPECT_FALSE(comm_workloads_to_json(2, given)["workloads"][0].contains("host_rw_dims"));
  given[0].host_rw_dims = {12, 12};
  back = comm_workloads_from_json(comm_workloads_to_json(2, given), "w.json", world_size);
  EXPECT_EQ(back[0].host_rw_dims, (std::vector<int64_t>{12, 12}));
  EXPECT_NE(comm_workloads_digest(back), without_hosts);
  doc = comm_workloads_to_json(2, given);
  doc["workloads"][0]["host_rw_dims"] = {12};
  try {
    comm_workloads_from_json(doc, "w.json", world_size);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workloads[0].host_rw_dims: must list the 2 ranks"), std::string::npos)
        << e.what();
  }
}

TEST(CommWorkloads, BadFilesNameTheFieldAndValue) {
  auto good = [] {
    return nlohmann::json::parse(R"({"format": "shard-plan-comm-workloads/1", "world_size": 2,
        "workloads": [{"dim_sums": [8, 16], "delays_ms": [0, 1.5]}]})");
  };
  auto expect_error = [](const nlohmann::json& doc, const std::string& expected) {
    int world_size = 0;
    try {
      comm_workloads_from_json(doc, "w.json", world_size);
      ADD_FAILURE() << "accepted " << doc.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  int world_size = 0;
  EXPECT_EQ(comm_workloads_from_json(good(), "w.json", world_size).size(), 1u);
  auto doc = good();
  doc["format"] = "something/2";
  expect_error(doc, "w.json: format: must be \"shard-plan-comm-workloads/1\", got \"something/2\"");
  doc = good();
  doc["world_size"] = 1;
  expect_error(doc, "world_size: must be an integer in [2, 4096], got 1");
  doc = good();
  doc["workloads"] = nlohmann::json::array();
  expect_error(doc, "workloads: must list at least one workload");
  doc = good();
  doc["workloads"][0]["dim_sums"] = {8, 16, 24};
  expect_error(doc, "workloads[0].dim_sums: must list the 2 ranks of world_size");
  doc = good();
  doc["workloads"][0]["dim_sums"][1] = -4;
  expect_error(doc, "workloads[0].dim_sums[1]: must be an integer in [0, 1048576], got -4");
  doc = good();
  doc["workloads"][0]["delays_ms"][0] = "soon";
  expect_error(doc, "workloads[0].delays_ms[0]: must be a finite number");
  doc = good();
  doc["workloads"][0].erase("delays_ms");
  expect_error(doc, "workloads[0].delays_ms: missing required field");
}

}  // namespace
}  // namespace shardplan
