#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/fabric_fit.hpp"

namespace shardplan {
namespace {

// 2 hosts of 2 GPUs; batch 16, so each rank owns 4 samples and a unit of width to one peer is 16 bytes.
CommFabric two_by_two() {
  CommFabric f;
  f.name = "test";
  f.devices_per_host = 2;
  f.intra_bytes_per_ms = 100.0;
  f.intra_peer_latency_ms = 0.5;
  f.inter_bytes_per_ms = 10.0;
  f.inter_peer_latency_ms = 2.0;
  f.batch_size = 16;
  return f;
}

TEST(CommStructure, AHierarchicalCaseComputedByHand) {
  // Widths 4, 8 on host 0 and 12, 16 on host 1. Rank 0: intra out 16 x 4 x 1 = 64 B, intra in 16 x 8 =
  // 128 B; inter out 16 x 4 x 2 = 128 B, inter in 16 x 28 = 448 B. Intra: 1 x 0.5 + 128 / 100 = 1.78 ms;
  // inter: 2 x 2 + 448 / 10 = 48.8 ms. Rank 3: intra out 256, in 192 -> 0.5 + 2.56 = 3.06; inter out
  // 16 x 16 x 2 = 512, in 16 x 12 = 192 -> 4 + 51.2 = 55.2 ms.
  const std::vector<int64_t> widths = {4, 8, 12, 16};
  std::vector<AllToAllVolume> v = alltoall_volumes(two_by_two(), widths);
  EXPECT_DOUBLE_EQ(v[0].intra_out, 64);
  EXPECT_DOUBLE_EQ(v[0].intra_in, 128);
  EXPECT_DOUBLE_EQ(v[0].inter_out, 128);
  EXPECT_DOUBLE_EQ(v[0].inter_in, 448);
  EXPECT_EQ(v[0].intra_peers, 1);
  EXPECT_EQ(v[0].inter_peers, 2);
  std::vector<double> ms;
  hierarchical_alltoall_ms(two_by_two(), widths, ms);
  EXPECT_NEAR(ms[0], 48.8, 1e-9);
  EXPECT_NEAR(ms[3], 55.2, 1e-9);
  // A shared host fabric of 20 B/ms bounds host 0: it sends 16 x 12 x 3 = 576 B, receives 16 x 28 x 2 = 896 B.
  CommFabric shared = two_by_two();
  shared.host_bytes_per_ms = 20.0;
  hierarchical_alltoall_ms(shared, widths, ms);
  EXPECT_NEAR(ms[0], (576.0 + 896.0) / 20.0, 1e-9);
  // Or, for ranks that share the copying cores, its share adds to the rank's own links: 48.8 + 73.6 ms.
  shared.host_adds = true;
  hierarchical_alltoall_ms(shared, widths, ms);
  EXPECT_NEAR(ms[0], 48.8 + (576.0 + 896.0) / 20.0, 1e-9);
  // One network port per host, shared fairly: rank 0 sends 128 B and its neighbour 256 B, so its sending
  // is through after 128 + 128 B; both receive 448 B, so its receiving after 896 B: 4 + 896 / 10 ms.
  CommFabric port = two_by_two();
  port.inter_shared_by_host = true;
  hierarchical_alltoall_ms(port, widths, ms);
  EXPECT_NEAR(ms[0], 4.0 + 89.6, 1e-9);
  EXPECT_NEAR(ms[3], 4.0 + (384.0 + 512.0) / 10.0, 1e-9);
  // One device exchanges nothing.
  hierarchical_alltoall_ms(two_by_two(), {64}, ms);
  EXPECT_EQ(ms, std::vector<double>{0.0});
}

// The input all-to-all is the output's traffic reversed, each id 8 bytes (two 4-byte columns): ids per
// sample 2, 4, 6, 8 move the bytes that widths 4, 8, 12, 16 do, so rank 0 takes 48.8 ms as above.
TEST(CommStructure, AnEmptyAllToAllCostsItsSlowestDevicesPeersLatencies) {
  CommFabric f = two_by_two();
  EXPECT_EQ(alltoall_latency_ms(f, 1), 0.0);
  EXPECT_DOUBLE_EQ(alltoall_latency_ms(f, 2), 0.5);  // one host: one peer
  EXPECT_DOUBLE_EQ(alltoall_latency_ms(f, 4), 2 * 2.0);
  EXPECT_DOUBLE_EQ(alltoall_latency_ms(f, 5), 4 * 2.0);  // the fifth GPU, alone on its host, has 4 remote peers
  f.devices_per_host = 8;
  EXPECT_DOUBLE_EQ(alltoall_latency_ms(f, 4), 3 * 0.5);
  f.inter_peer_latency_ms = 0.01;
  EXPECT_DOUBLE_EQ(alltoall_latency_ms(f, 16), 7 * 0.5);  // the links within a host are the slower here
  // What the widths' structure gives the slowest device for no width at all.
  f = two_by_two();
  std::vector<double> none;
  hierarchical_alltoall_ms(f, std::vector<int64_t>(5, 0), none);
  EXPECT_DOUBLE_EQ(*std::max_element(none.begin(), none.end()), alltoall_latency_ms(f, 5));
}

TEST(CommStructure, TheInputAllToAllMovesEachIdAsTwoColumns) {
  std::vector<double> input, output;
  input_alltoall_ms(two_by_two(), {2.0, 4.0, 6.0, 8.0}, input);
  hierarchical_alltoall_ms(two_by_two(), {4, 8, 12, 16}, output);
  ASSERT_EQ(input.size(), 4u);
  for (std::size_t r = 0; r < input.size(); ++r) EXPECT_NEAR(input[r], output[r], 1e-9) << r;
  EXPECT_NEAR(input[0], 48.8, 1e-9);
  // Fractional ids (row blocks' shares) are bytes like any other; one device exchanges nothing.
  input_alltoall_ms(two_by_two(), {2.0, 4.0, 6.0, 8.5}, input);
  EXPECT_NEAR(input[3], 4.0 + 16.0 * 17.0 * 2.0 / 10.0, 1e-9);  // its inter-host sending bounds it
  input_alltoall_ms(two_by_two(), {9.0}, input);
  EXPECT_EQ(input, std::vector<double>{0.0});
}

// Samples of 2 to 8 ranks on one host, timed exactly as `truth` says.
std::vector<CommSample> samples_of(const CommFabric& truth) {
  Rng rng(11);
  std::vector<CommSample> samples;
  for (int i = 0; i < 300; ++i) {
    CommSample s;
    s.world_size = 2 << rng.below(3);
    for (int r = 0; r < s.world_size; ++r) s.dim_sums.push_back(4 * static_cast<int64_t>(1 + rng.below(300)));
    CommFabric f = truth;
    f.devices_per_host = s.world_size;
    hierarchical_alltoall_ms(f, s.dim_sums, s.bw_ms);
    s.delays_ms.assign(s.bw_ms.size(), 0.0);
    s.fw_ms = s.bw_ms;
    samples.push_back(std::move(s));
  }
  return samples;
}

TEST(FabricFit, TheDataDecidesWhetherTheHostFabricAddsOrBounds) {
  CommFabric truth;
  truth.name = "truth";
  truth.intra_bytes_per_ms = truth.inter_bytes_per_ms = 4e6;
  truth.intra_peer_latency_ms = truth.inter_peer_latency_ms = 0.4;
  truth.host_bytes_per_ms = 6e6;
  for (bool adds : {true, false}) {
    truth.host_adds = adds;
    FabricFit fit = fit_fabric(samples_of(truth), truth);
    EXPECT_EQ(fit.fabric.host_adds, adds);
    EXPECT_LT(fit.mean_abs_log_error, 0.02) << "adds " << adds;
  }
}

TEST(CommStructure, MoreBytesNeverCostLess) {
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    CommFabric f = two_by_two();
    f.devices_per_host = 1 + static_cast<int>(rng.below(8));
    f.host_bytes_per_ms = rng.below(2) ? 30.0 : 0.0;
    f.host_adds = rng.below(2) == 1;
    f.inter_shared_by_host = rng.below(2) == 1;
    const std::size_t n = 2 + rng.below(20);
    std::vector<int64_t> widths;
    for (std::size_t r = 0; r < n; ++r) widths.push_back(static_cast<int64_t>(rng.below(500)));
    std::vector<double> before, after;
    hierarchical_alltoall_ms(f, widths, before);
    widths[rng.below(n)] += 1 + static_cast<int64_t>(rng.below(100));
    hierarchical_alltoall_ms(f, widths, after);
    for (std::size_t r = 0; r < n; ++r) EXPECT_GE(after[r], before[r]) << "trial " << trial << " rank " << r;
  }
}

nlohmann::json valid_profile() {
  return {{"format", "shard-plan-hardware/1"},
          {"name", "x"},
          {"kind", "published"},
          {"gpus_per_host", 4},
          {"memory_per_gpu", "16GiB"},
          {"intra_host", {{"bandwidth_GBps", 100.0}, {"peer_latency_us", 1.0}}},
          {"inter_host", {{"bandwidth_GBps", 10.0}}}};
}

std::string parse_error(const nlohmann::json& doc) {
  try {
    parse_hardware_profile(doc, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HardwareProfile, ParsesAndConvertsUnits) {
  HardwareProfile p = parse_hardware_profile(valid_profile(), "p.json");
  EXPECT_EQ(p.gpus_per_host, 4);
  EXPECT_EQ(p.memory_per_gpu_bytes, 16ll << 30);
  CommFabric f = fabric_of(p, 2048);
  EXPECT_DOUBLE_EQ(f.intra_bytes_per_ms, 100e6);  // 100 GB/s = 10^8 bytes per ms
  EXPECT_DOUBLE_EQ(f.intra_peer_latency_ms, 0.001);
  EXPECT_DOUBLE_EQ(f.inter_peer_latency_ms, 0.0);
  EXPECT_EQ(f.host_bytes_per_ms, 0.0);
  CommFabric back = fabric_from_json(fabric_to_json(f), "meta.json", "comm.fabric");
  EXPECT_DOUBLE_EQ(back.intra_bytes_per_ms, f.intra_bytes_per_ms);
  EXPECT_EQ(back.batch_size, 2048);
  // The host fabric bounds unless the profile says it adds; models written before it have no such field.
  EXPECT_FALSE(f.host_adds);
  EXPECT_FALSE(fabric_to_json(f).contains("host_bandwidth_adds"));
  nlohmann::json doc = valid_profile();
  doc["host_bandwidth_GBps"] = 5.0;
  doc["host_bandwidth_adds"] = true;
  CommFabric adding = fabric_of(parse_hardware_profile(doc, "p.json"), 2048);
  EXPECT_TRUE(adding.host_adds);
  EXPECT_TRUE(fabric_from_json(fabric_to_json(adding), "meta.json", "comm.fabric").host_adds);
}

TEST(HardwareProfile, ErrorsNameTheField) {
  nlohmann::json doc = valid_profile();
  doc["intra_host"].erase("bandwidth_GBps");
  EXPECT_NE(parse_error(doc).find("intra_host.bandwidth_GBps"), std::string::npos) << parse_error(doc);
  doc = valid_profile();
  doc["inter_host"]["bandwidth_GBps"] = -5;
  EXPECT_NE(parse_error(doc).find("inter_host.bandwidth_GBps"), std::string::npos) << parse_error(doc);
  EXPECT_NE(parse_error(doc).find("-5"), std::string::npos) << parse_error(doc);
  doc = valid_profile();
  doc["gpus_per_host"] = 0;
  EXPECT_NE(parse_error(doc).find("gpus_per_host"), std::string::npos);
  doc = valid_profile();
  doc["format"] = "shard-plan-hardware/9";
  EXPECT_NE(parse_error(doc).find("format"), std::string::npos);
  doc = valid_profile();
  doc["kind"] = "guessed";
  EXPECT_NE(parse_error(doc).find("kind"), std::string::npos);
  doc = valid_profile();
  doc["memory_per_gpu"] = "lots";
  EXPECT_NE(parse_error(doc).find("memory_per_gpu"), std::string::npos) << parse_error(doc);
  doc = valid_profile();
  doc["host_bandwidth_adds"] = "yes";
  EXPECT_NE(parse_error(doc).find("host_bandwidth_adds: must be true or false"), std::string::npos) << parse_error(doc);
  doc = valid_profile();
  doc["device_model"] = 100;
  EXPECT_NE(parse_error(doc).find("device_model"), std::string::npos) << parse_error(doc);
  doc["device_model"] = "NVIDIA A100-SXM4-80GB";
  EXPECT_EQ(parse_hardware_profile(doc, "p.json").device_model, "NVIDIA A100-SXM4-80GB");
}

TEST(HardwareProfile, ShippedProfilesLoadByName) {
  std::vector<std::string> names = shipped_hardware_profiles();
  for (const char* wanted : {"cpu-2core", "h100-sxm-ib400", "a100-sxm-ib200", "cpu-2core-torchrec"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), wanted), names.end()) << wanted;
    HardwareProfile p = load_hardware_profile(wanted);
    EXPECT_EQ(p.name, wanted);
    EXPECT_NO_THROW(validate_fabric(fabric_of(p, 2048), p.source_path));
  }
  try {
    load_hardware_profile("no-such-cluster");
    FAIL() << "an unknown profile loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm-ib400"), std::string::npos) << e.what();  // lists the shipped ones
  }
}

// The real stack on CPU ranks (cpu-2core-torchrec): every rank's all-to-all is bound by the host's shared
// copies, so it follows the plan's total width and not where the widths are: a search under it balances
// compute alone. Its fit's figures come back: 10.33 ms + 0.01467 ms per column, both directions, 4 ranks.
TEST(HardwareProfile, TheRealStacksAllToAllDoesNotDependOnPlacement) {
  CommFabric fabric = fabric_of(load_hardware_profile("cpu-2core-torchrec"), 2048);
  std::vector<double> even, skewed;
  hierarchical_alltoall_ms(fabric, {500, 500, 500, 500}, even);
  hierarchical_alltoall_ms(fabric, {1700, 100, 100, 100}, skewed);
  for (double ms : skewed) EXPECT_NEAR(ms, even[0], 1e-3 * even[0]);
  EXPECT_NEAR(2 * even[0], 10.33 + 0.01467 * 2000, 0.05);
  // Its input all-to-all charges every rank 0.0147 ms per id per sample (two columns, one direction) on
  // top of the collective's latency: what a column-wise split adds for each piece beyond the first.
  std::vector<double> ids, more_ids;
  input_alltoall_ms(fabric, {100, 100, 100, 100}, ids);
  input_alltoall_ms(fabric, {200, 100, 100, 100}, more_ids);
  for (std::size_t r = 0; r < ids.size(); ++r) EXPECT_NEAR(more_ids[r] - ids[r], 100 * 0.01467, 0.01) << r;
}

}  // namespace
}  // namespace shardplan
