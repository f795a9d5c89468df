#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/uvm_cache.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using nlohmann::json;
using testing::make_table;

// FBGEMM's buffers (docs/design/uvm-caching.md 3.2): in HBM the cache rows, 16 bytes of LRU state per slot,
// 4 bytes per row for the table map and rowwise adagrad's state; in DDR the weights and element-wise state.
TEST(UvmCache, PieceMemoryFollowsFbgemmsBuffers) {
  const int64_t rows = 3200;
  const int64_t slots = 320;
  PieceMemory m = cached_piece_memory(rows, 64, DType::kFp32, Optimizer::kRowwiseAdagrad, 0.1);
  EXPECT_EQ(m.hbm, slots * 64 * 4 + slots * 16 + rows * 4 + rows * 4);
  EXPECT_EQ(m.ddr, rows * 64 * 4);
  m = cached_piece_memory(rows, 64, DType::kFp16, Optimizer::kAdam, 0.1);
  EXPECT_EQ(m.hbm, slots * 64 * 2 + slots * 16 + rows * 4);
  EXPECT_EQ(m.ddr, rows * 64 * 2 + 2 * rows * 64 * 4);
  m = cached_piece_memory(rows, 64, DType::kFp32, Optimizer::kSgd, 0.1);
  EXPECT_EQ(m.ddr, rows * 64 * 4);
}

// 5e9 x 32 fp32 with rowwise adagrad (HugeCTR's g3_t0) cached at 0.05: 32 GB of cache, 1.28 GB of slot
// state, 20 GB of row map and 20 GB of state, against 660 GB whole (the design's arithmetic).
TEST(UvmCache, ALargeTablesCacheFreesMostOfItsHbm) {
  const PieceMemory m = cached_piece_memory(5'000'000'000, 32, DType::kFp32, Optimizer::kRowwiseAdagrad, 0.05);
  EXPECT_NEAR(static_cast<double>(m.hbm) / 1e9, 32.0 + 4.0 + 20.0 + 20.0, 0.01);
  EXPECT_EQ(m.ddr, 640'000'000'000);
  EXPECT_GE(shard_memory_bytes(5'000'000'000, 32, DType::kFp32, Optimizer::kRowwiseAdagrad) - m.hbm, 584'000'000'000);
}

class CachedPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = {make_table("big", 100'000, 64), make_table("small", 1000, 16)};
    plan_.algorithm = "hand";
    plan_.cluster.num_devices = 4;
    plan_.cluster.devices_per_host = 2;
    plan_.cluster.memory_per_device_bytes = 1 << 30;
    plan_.cluster.optimizer = Optimizer::kRowwiseAdagrad;
    plan_.cluster.ddr_per_host_bytes = 1ll << 30;
    plan_.cluster.host_link_gb_per_s = 25.0;
    plan_.tables = {row_wise_sharding(tables_[0], 4), table_wise_sharding(tables_[1], 2)};
    plan_.tables[0].cache = CacheParams{0.2};
  }
  json doc() const { return json::parse(plan_to_string(plan_)); }
  std::vector<std::string> problems(const json& d) const { return validate_plan_json(d, tables_, "p.json").problems; }

  std::vector<Table> tables_;
  Plan plan_;
};

TEST_F(CachedPlanTest, WritesTheKernelAndCacheParamsAndReadsThemBack) {
  const json d = doc();
  EXPECT_EQ(d["tables"][0]["compute_kernel"], "fused_uvm_caching");
  EXPECT_EQ(d["tables"][0]["cache_params"]["algorithm"], "LRU");
  EXPECT_EQ(d["tables"][0]["cache_params"]["load_factor"], 0.2);
  EXPECT_EQ(d["tables"][1]["compute_kernel"], "fused");
  EXPECT_FALSE(d["tables"][1].contains("cache_params"));
  EXPECT_EQ(d["ddr_per_host_bytes"], 1ll << 30);
  const PieceMemory block = cached_piece_memory(25'000, 64, DType::kFp32, Optimizer::kRowwiseAdagrad, 0.2);
  EXPECT_EQ(d["devices"][0]["memory_bytes"], block.hbm);
  EXPECT_EQ(d["devices"][0]["ddr_bytes"], block.ddr);
  EXPECT_EQ(d["summary"]["max_host_ddr_bytes"], 2 * block.ddr);
  EXPECT_TRUE(problems(d).empty()) << problems(d).front();

  const Plan read = plan_from_json(d, tables_, "p.json");
  ASSERT_TRUE(read.tables[0].cache.has_value());
  EXPECT_EQ(read.tables[0].cache->load_factor, 0.2);
  EXPECT_FALSE(read.tables[1].cache.has_value());
  EXPECT_EQ(read.cluster.ddr_per_host_bytes, 1ll << 30);
  EXPECT_EQ(read.cluster.host_link_gb_per_s, 25.0);
  EXPECT_EQ(plan_to_string(read), plan_to_string(plan_));
}

TEST_F(CachedPlanTest, ValidateNamesEveryBadCache) {
  auto has = [&](const json& d, const std::string& fragment) {
    for (const auto& p : problems(d)) {
      if (p.find(fragment) != std::string::npos) return true;
    }
    return false;
  };
  json d = doc();
  // One rule, one message, for every load factor a plan may not give (#62): problems of the plan, never an
  // unreadable file, whether 0, 1, out of [0, 1] or too small for FBGEMM's smallest cache.
  for (const auto& [bad, says] : std::vector<std::pair<double, std::string>>{
           {1.0, "must lie strictly between 0 and 1, got 1"},
           {0.0, "must lie strictly between 0 and 1, got 0"},
           {1.5, "must lie strictly between 0 and 1, got 1.5"},
           {-0.1, "must lie strictly between 0 and 1, got -0.1"},
           {1e-300, "1e-300 caches 0 of a piece's 25000 rows, under one of FBGEMM's 32-way sets"},
           {0.001, "0.001 caches 25 of a piece's 25000 rows, under one of FBGEMM's 32-way sets"}}) {
    d = doc();
    d["tables"][0]["cache_params"]["load_factor"] = bad;
    EXPECT_TRUE(has(d, "tables[0].cache_params.load_factor: " + says)) << bad << ": " << problems(d).front();
    EXPECT_THROW(plan_from_json(d, tables_, "p.json"), InputError) << bad;
  }
  plan_.tables[0].cache = CacheParams{0.00128};  // 32 rows of 25,000: FBGEMM's smallest cache
  d = doc();
  EXPECT_TRUE(problems(d).empty()) << problems(d).front();
  plan_.tables[0].cache = CacheParams{0.2};
  d = doc();
  d["summary"]["max_host_ddr_bytes"] = 7;
  EXPECT_TRUE(has(d, "summary.max_host_ddr_bytes: says 7, the fullest host's cached shards need"));
  d = doc();
  d["summary"]["max_memory_bytes"] = 7;
  EXPECT_TRUE(has(d, "summary.max_memory_bytes: says 7"));
  d = doc();
  d["tables"][0]["cache_params"]["algorithm"] = "LFU";
  EXPECT_TRUE(has(d, "\"LFU\" is not planned"));
  d = doc();
  d["tables"][0].erase("cache_params");
  EXPECT_TRUE(has(d, "needs one (its load factor)"));
  d = doc();
  d["tables"][1]["cache_params"] = {{"load_factor", 0.5}};
  EXPECT_TRUE(has(d, "only a fused_uvm_caching table has a cache"));
  d = doc();
  d["tables"][1]["compute_kernel"] = "fused_uvm";
  EXPECT_TRUE(has(d, "unknown \"fused_uvm\""));
  d = doc();
  d.erase("ddr_per_host_bytes");
  EXPECT_TRUE(has(d, "offers none"));
  d = doc();
  d["ddr_per_host_bytes"] = 1000;
  EXPECT_TRUE(has(d, "host 0: its devices' cached tables need"));
  d = doc();
  d["devices"][1]["ddr_bytes"] = 5;
  EXPECT_TRUE(has(d, "devices[1].ddr_bytes: says 5"));
}

TEST_F(CachedPlanTest, PlansWithoutHostMemoryWriteNoneOfItsFields) {
  plan_.cluster.ddr_per_host_bytes = 0;
  plan_.tables[0].cache.reset();
  const json d = doc();
  EXPECT_FALSE(d.contains("ddr_per_host_bytes"));
  EXPECT_FALSE(d.contains("host_link_GBps"));
  EXPECT_FALSE(d["devices"][0].contains("ddr_bytes"));
  EXPECT_FALSE(d["summary"].contains("max_host_ddr_bytes"));
}

// A table larger than the cluster's HBM goes to host memory behind a cache; the small ones stay in HBM
// (their misses cost nothing under the model, but caching them frees nothing that matters), and without
// host memory the same tables are infeasible.
TEST(CachedPlanning, CachesTheTableHbmCannotHoldAndOnlyIt) {
  std::vector<Table> tables = {make_table("big", 6'000'000, 64, 2.0), make_table("s0", 1000, 16),
                               make_table("s1", 2000, 32), make_table("s2", 3000, 8)};
  Cluster cluster;
  cluster.num_devices = 4;
  cluster.devices_per_host = 2;
  cluster.memory_per_device_bytes = 300'000'000;
  cluster.optimizer = Optimizer::kRowwiseAdagrad;
  EXPECT_THROW(make_planner("neuroshard", testing::planner_config())->plan(tables, cluster), InfeasibleError);
  cluster.ddr_per_host_bytes = 8'000'000'000;
  cluster.host_link_gb_per_s = 25.0;
  const Plan plan = make_planner("neuroshard", testing::planner_config())->plan(tables, cluster);
  ASSERT_TRUE(plan.tables[0].cache.has_value());
  EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  EXPECT_TRUE(valid_load_factor(plan.tables[0].cache->load_factor));
  for (std::size_t t = 1; t < plan.tables.size(); ++t) EXPECT_FALSE(plan.tables[t].cache.has_value()) << t;
  const auto problems = validate_plan_json(json::parse(plan_to_string(plan)), tables, "p.json").problems;
  EXPECT_TRUE(problems.empty()) << problems.front();
  for (const DeviceUsage& u : device_usage(plan)) {
    EXPECT_LE(u.memory_bytes, cluster.usable_bytes_per_device());
    EXPECT_GT(u.ddr_bytes, 0);
  }
  // Too little host memory for the big table's weights: exit 3's error.
  cluster.ddr_per_host_bytes = 100'000'000;
  EXPECT_THROW(make_planner("neuroshard", testing::planner_config())->plan(tables, cluster), InfeasibleError);
}

}  // namespace
}  // namespace shardplan
