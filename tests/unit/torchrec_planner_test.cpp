// The torchrec baselines: TorchRec's per-type estimate, checked against its formulas written in its own
// variables (B samples per rank), and what its all-types planner chooses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"
#include "torchrec_estimates.hpp"
#include "torchrec_planner.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;

const AnalyticCostConfig kConfig{};  // G = 2048 samples, 8 GPUs per host, TorchRec's nominal bandwidths
const double kHbm = kConfig.hbm_bandwidth_bytes_per_ms;
const double kIntra = kConfig.intra_host_bytes_per_ms;
const double kInter = kConfig.inter_host_bytes_per_ms;

// shard_estimators.py: _get_rw_sharding_perf with B = 512 per rank on 4 ranks, pooling 10, dim 64.
TEST(TorchRecEstimate, RowWiseBlockFollowsTorchRec) {
  const Table table = make_table("t", 1000, 64, 10.0);
  const double b = 512, w = 4, d = 64;
  const double batch_inputs = 10 * b / w;
  const double input_read = batch_inputs * w * 8;
  const double lookups = batch_inputs * w * d * 4;
  const double output = b * w * d * 4;
  const double fwd_compute = (input_read + lookups + output) / kHbm;
  const double expected = fwd_compute + output / kIntra + 2 * fwd_compute + output / kIntra + output * 2.455 / kHbm;
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kRowWise, table, 64, 4, kConfig), expected, 1e-12);
}

// _get_twrw_sharding_perf with 16 ranks on 2 hosts of 8: B = 128, a reduce-scatter in the host and an
// all-to-all among the hosts.
TEST(TorchRecEstimate, TableRowWiseBlockFollowsTorchRec) {
  const Table table = make_table("t", 1000, 64, 10.0);
  const double b = 128, w = 16, k = 8, d = 64;
  const double batch_inputs = 10 * b / k;
  const double input_read = batch_inputs * w * 8;
  const double lookups = batch_inputs * w * d * 4;
  const double output = b * w * d * 4;
  const double across = b * (w / k) * d * 4;
  const double fwd_compute = (input_read + lookups + output) / kHbm;
  const double comms = output / kIntra + across / kInter;
  const double expected = fwd_compute + comms + 2 * fwd_compute + comms + output * 2.455 / kHbm;
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kTableRowWise, table, 64, 16, kConfig), expected, 1e-12);
}

// _get_dp_sharding_perf: every rank looks up its own B samples, then all-reduces the table's gradient at
// one NIC per GPU (nodes = min(W / local, 2)), doubled past two hosts, and runs the optimizer over it.
TEST(TorchRecEstimate, ReplicaFollowsTorchRec) {
  const Table table = make_table("t", 1000, 64, 10.0);
  const double d = 64, table_bytes = 1000 * d * 4;
  auto expected = [&](double w, double local) {
    const double b = 2048 / w;
    const double fwd_compute = (10 * b * 8 + 10 * b * d * 4 + b * d * 4) / kHbm;
    const double nodes = std::min(w / local, 2.0);
    double all_reduce = table_bytes * (2 * nodes - 1) / nodes / (kInter * local);
    if (w > 2 * local) all_reduce *= 2;
    return 3 * fwd_compute + all_reduce + table_bytes * 9.22 / kHbm;
  };
  // 4 GPUs of one host: TorchRec's local world is the job's 4 ranks.
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kDataParallel, table, 64, 4, kConfig), expected(4, 4), 1e-12);
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kDataParallel, table, 64, 16, kConfig), expected(16, 8), 1e-12);
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kDataParallel, table, 64, 64, kConfig), expected(64, 8), 1e-12);
}

// _get_tw_sharding_perf: every lookup of the batch on one GPU, TorchRec's width penalty and its 32-column
// minimum gather.
TEST(TorchRecEstimate, TableWiseFollowsTorchRec) {
  const Table table = make_table("t", 1000, 24, 3.0);
  const double b = 256, w = 8, d = 24;
  const double input_read = 3 * b * w * 8;
  const double lookups = 3 * b * w * 32 * 4;  // max(d, 32)
  const double output = b * w * d * 4;
  const double fwd_compute = (input_read + lookups + output) * 1.75 / kHbm;  // d < 64
  const double expected = fwd_compute + output / kIntra + 2 * fwd_compute + output / kIntra;
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kTableWise, table, 24, 8, kConfig), expected, 1e-12);
}

// Past one host the row-wise collectives run at the network's rate; with hosts that do not divide the job,
// TorchRec takes the whole job as one host (get_local_size), and so at NVLink's.
TEST(TorchRecEstimate, RowWiseCollectivesFollowTheLocalWorldSize) {
  const Table table = make_table("t", 1000, 64, 10.0);
  auto expected = [&](double w, double link) {
    const double b = 2048 / w, d = 64;
    const double batch_inputs = 10 * b / w;
    const double output = b * w * d * 4;
    const double fwd_compute = (batch_inputs * w * 8 + batch_inputs * w * d * 4 + output) / kHbm;
    return 3 * fwd_compute + 2 * output / link + output * 2.455 / kHbm;
  };
  AnalyticCostConfig config = kConfig;
  config.devices_per_host = torchrec_local_world_size(16, 8);
  EXPECT_EQ(config.devices_per_host, 8);
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kRowWise, table, 64, 16, config), expected(16, kInter), 1e-12);
  config.devices_per_host = torchrec_local_world_size(12, 8);
  EXPECT_EQ(config.devices_per_host, 12);
  EXPECT_NEAR(torchrec_shard_perf_ms(ShardingType::kRowWise, table, 64, 12, config), expected(12, kIntra), 1e-12);
  EXPECT_EQ(torchrec_local_world_size(4, 8), 4);
}

ValidationResult validate(const Plan& plan, const std::vector<Table>& tables) {
  return validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
}

// Its estimate spreads a hot table's lookups: one table with most of the work goes row-wise.
TEST(TorchRecAllTypes, SpreadsAHotTableRowWise) {
  std::vector<Table> tables = {make_table("hot", 4'000'000, 128, 200.0)};
  for (int i = 0; i < 7; ++i) tables.push_back(make_table("cold" + std::to_string(i), 200'000, 64, 2.0));
  const Cluster cluster = cluster_of(8, 16ll << 30);
  const Plan plan = make_planner("torchrec_all_types", testing::planner_config())->plan(tables, cluster);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  EXPECT_EQ(plan.tables[0].shards.size(), 8u);
  EXPECT_TRUE(validate(plan, tables).valid());
  // The table- and column-wise baseline keeps it whole.
  const Plan restricted = make_planner("torchrec", testing::planner_config())->plan(tables, cluster);
  EXPECT_EQ(restricted.tables[0].type, ShardingType::kTableWise);
}

// A narrow table larger than any GPU: TorchRec's width rule cannot split it, row blocks can. Its rows do
// not split evenly, and the GPUs' memory is nearly full with its blocks.
TEST(TorchRecAllTypes, PlansANarrowTableNoGpuHoldsWhole) {
  std::vector<Table> tables = {make_table("narrow", 50'000'003, 4), make_table("small", 1000, 16)};
  // Blocks of 12,500,001 rows on ranks 0-2 (200,000,016 bytes) and 12,500,000 on rank 3: only rank 3 has
  // room left for "small" whole (64,000 bytes).
  const Cluster cluster = cluster_of(4, 200'064'008);
  EXPECT_THROW(make_planner("torchrec", testing::planner_config())->plan(tables, cluster), InfeasibleError);
  const Plan plan = make_planner("torchrec_all_types", testing::planner_config())->plan(tables, cluster);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  if (plan.tables[1].type == ShardingType::kTableWise) {
    EXPECT_EQ(plan.tables[1].shards[0].rank, 3);
  }
  for (const auto& usage : device_usage(plan)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
  EXPECT_TRUE(validate(plan, tables).valid());
}

// Across hosts its estimate prefers row blocks within one host (a reduce-scatter over NVLink, then an
// all-to-all among hosts) to row blocks over every GPU; every plan it makes validates and fits.
TEST(TorchRecAllTypes, PlansAcrossHostsWithinMemory) {
  auto tables = testing::varied_tables(80);
  tables.push_back(make_table("hot", 3'000'000, 64, 300.0));
  for (int devices : {16, 64}) {
    Cluster cluster = cluster_of(devices, 4ll << 30);
    cluster.optimizer = Optimizer::kRowwiseAdagrad;
    const Plan plan = make_planner("torchrec_all_types", testing::planner_config())->plan(tables, cluster);
    EXPECT_EQ(plan.tables.back().type, ShardingType::kTableRowWise) << devices;
    for (const auto& usage : device_usage(plan)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
    const auto result = validate(plan, tables);
    EXPECT_TRUE(result.valid()) << devices << ": " << result.problems.front();
  }
}

// Tables of fewer rows than GPUs (row blocks on some ranks only, their shards without rows charged as
// TorchRec charges empty shards): every plan validates, whatever type each gets.
TEST(TorchRecAllTypes, PlansTablesOfFewerRowsThanGpus) {
  std::vector<Table> tables;
  for (int rows : {3, 7, 20, 63}) tables.push_back(make_table("r" + std::to_string(rows), rows, 128, 300.0));
  for (int i = 0; i < 8; ++i) tables.push_back(make_table("t" + std::to_string(i), 100'000, 128, 1.0));
  const Cluster cluster = cluster_of(8, 1ll << 30);
  const Plan plan = make_planner("torchrec_all_types", testing::planner_config())->plan(tables, cluster);
  const auto result = validate(plan, tables);
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

// "torchrec_cw32" splits column-wise from 32 columns, where TorchRec's default 128 leaves a table whole.
TEST(TorchRecCw32, SplitsFrom32Columns) {
  EXPECT_EQ(torchrec_column_width(64, 32), 32);
  EXPECT_EQ(torchrec_column_width(96, 32), 32);
  EXPECT_EQ(torchrec_column_width(40, 32), 40);  // no smaller divisor of 4s
  EXPECT_EQ(torchrec_column_width(32, 32), 32);
  EXPECT_EQ(torchrec_column_width(256, kTorchRecMinPartition), 128);
  EXPECT_EQ(make_planner("torchrec_cw32", testing::planner_config())->name(), "torchrec_cw32");
}

// A 64-column table no GPU holds whole: the default width cannot split it, 32 columns can.
TEST(TorchRecCw32, PlansATableOnlyItsShardsFit) {
  std::vector<Table> tables = {make_table("wide", 1'000'000, 64, 20.0), make_table("small", 1000, 16)};
  const Cluster cluster = cluster_of(4, 200'000'000);  // the table's 256 MB do not fit; 128 MB halves do
  EXPECT_THROW(make_planner("torchrec", testing::planner_config())->plan(tables, cluster), InfeasibleError);
  const Plan plan = make_planner("torchrec_cw32", testing::planner_config())->plan(tables, cluster);
  ASSERT_EQ(plan.tables[0].type, ShardingType::kColumnWise);
  ASSERT_EQ(plan.tables[0].shards.size(), 2u);
  EXPECT_NE(plan.tables[0].shards[0].rank, plan.tables[0].shards[1].rank);
  for (const auto& shard : plan.tables[0].shards) EXPECT_EQ(shard.cols, 32);
  const auto result = validate(plan, tables);
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

}  // namespace
}  // namespace shardplan
