#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using nlohmann::json;
using testing::make_table;

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = {make_table("a", 1000, 64), make_table("b", 500, 32), make_table("c", 2000, 16)};
    Cluster cluster;
    cluster.num_devices = 4;
    cluster.memory_per_device_bytes = 1 << 20;
    plan_ = json::parse(plan_to_string(make_planner("size_greedy", testing::planner_config())->plan(tables_, cluster)));
  }

  std::vector<std::string> problems() { return validate_plan_json(plan_, tables_, "plan.json").problems; }

  bool has_problem(const std::string& fragment) {
    for (const auto& p : problems()) {
      if (p.find(fragment) != std::string::npos) return true;
    }
    return false;
  }

  // Splits table a column-wise into two pieces on ranks r0 and r1.
  void split_a(int r0, int64_t width0, int r1) {
    json& a = plan_["tables"][0];
    a["sharding_type"] = "column_wise";
    a["ranks"] = {r0, r1};
    a["shards"] = json::array({{{"rank", r0},
                                {"shard_offsets", {0, 0}},
                                {"shard_sizes", {1000, width0}},
                                {"placement", "rank:" + std::to_string(r0) + "/cuda:" + std::to_string(r0)}},
                               {{"rank", r1},
                                {"shard_offsets", {0, width0}},
                                {"shard_sizes", {1000, 64 - width0}},
                                {"placement", "rank:" + std::to_string(r1) + "/cuda:" + std::to_string(r1)}}});
    recount_devices();  // its memory summary changed
  }

  // The plan's devices summary recounted from its shards (fp32 weights without optimizer state, as the
  // fixture's tables and cluster have them).
  void recount_devices() {
    std::vector<int64_t> bytes(plan_["num_devices"].get<std::size_t>(), 0);
    for (const auto& table : plan_["tables"]) {
      for (const auto& shard : table["shards"]) {
        const int rank = shard["rank"].get<int>();
        if (rank < 0 || rank >= static_cast<int>(bytes.size())) continue;
        bytes[static_cast<std::size_t>(rank)] +=
            shard["shard_sizes"][0].get<int64_t>() * shard["shard_sizes"][1].get<int64_t>() * 4;
      }
    }
    for (std::size_t r = 0; r < bytes.size(); ++r) plan_["devices"][r]["memory_bytes"] = bytes[r];
    plan_["summary"]["max_memory_bytes"] = *std::max_element(bytes.begin(), bytes.end());
  }

  std::vector<Table> tables_;
  json plan_;
};

TEST_F(ValidateTest, AcceptsAPlannerPlan) { EXPECT_TRUE(problems().empty()) << problems().front(); }

TEST_F(ValidateTest, AcceptsAValidColumnWiseSplit) {
  split_a(0, 32, 3);
  EXPECT_TRUE(problems().empty()) << problems().front();
}

TEST_F(ValidateTest, FindsGapsAndOverlaps) {
  split_a(0, 32, 3);
  plan_["tables"][0]["shards"][1]["shard_sizes"] = {1000, 16};  // columns 48..63 uncovered
  EXPECT_TRUE(has_problem("shards cover 48000 of the 1000 x 64 cells (gaps)"));
  split_a(0, 32, 3);
  plan_["tables"][0]["shards"][1]["shard_offsets"] = {0, 16};
  plan_["tables"][0]["shards"][1]["shard_sizes"] = {1000, 48};
  EXPECT_TRUE(has_problem("tables[0].shards[1] overlaps shards[0]"));
  EXPECT_FALSE(has_problem("(gaps)")) << "an overlap is named as one, not as gaps (issue 43)";
}

// A grid of shards, each nudged or not: the sweep flags an overlap exactly when some pair overlaps.
TEST_F(ValidateTest, OverlapSweepAgreesWithEveryPair) {
  for (int trial = 0; trial < 200; ++trial) {
    uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(trial + 1);
    auto next = [&](int64_t below) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(below));
    };
    struct Box {
      int64_t r0, c0, rows, cols;
    };
    std::vector<Box> boxes;
    json shards = json::array();
    json ranks = json::array();
    for (int i = 0; i < 6; ++i) {
      Box b{next(900), 4 * next(14), 1 + next(300), 4 * (1 + next(4))};
      b.rows = std::min<int64_t>(b.rows, 1000 - b.r0);
      b.cols = std::min<int64_t>(b.cols, 64 - b.c0);
      boxes.push_back(b);
      const int rank = i % 4;
      ranks.push_back(rank);
      shards.push_back({{"rank", rank},
                        {"shard_offsets", {b.r0, b.c0}},
                        {"shard_sizes", {b.rows, b.cols}},
                        {"placement", "rank:" + std::to_string(rank) + "/cuda:" + std::to_string(rank)}});
    }
    bool any = false;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        const Box& a = boxes[i];
        const Box& b = boxes[j];
        any = any || (a.r0 < b.r0 + b.rows && b.r0 < a.r0 + a.rows && a.c0 < b.c0 + b.cols && b.c0 < a.c0 + a.cols);
      }
    }
    plan_["tables"][0]["sharding_type"] = "column_wise";
    plan_["tables"][0]["shards"] = shards;
    plan_["tables"][0]["ranks"] = ranks;
    EXPECT_EQ(has_problem("overlaps shards["), any) << "trial " << trial << ": " << shards.dump();
  }
}

// A row-wise table over 20,000 GPUs: one block per GPU, checked in well under the time pairs would take.
TEST(Validate, RowWiseOverManyThousandGpusIsChecked) {
  Table table = make_table("huge", 2'000'000, 16);
  Cluster cluster;
  cluster.num_devices = 20'000;
  cluster.memory_per_device_bytes = 1ll << 30;
  Plan plan;
  plan.algorithm = "handmade";
  plan.cluster = cluster;
  plan.tables.push_back(row_wise_sharding(table, cluster.num_devices));
  json doc = json::parse(plan_to_string(plan));
  EXPECT_TRUE(validate_plan_json(doc, {table}, "plan.json").valid());
  doc["tables"][0]["shards"][19'999]["shard_offsets"] = {1'999'800, 0};  // into the block above it
  ValidationResult result = validate_plan_json(doc, {table}, "plan.json");
  bool named = false;
  for (const auto& p : result.problems)
    named = named || p.find("shards[19999] overlaps shards[19998]") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST_F(ValidateTest, FindsShardsOutsideTheTable) {
  plan_["tables"][1]["shards"][0]["shard_sizes"] = {501, 32};
  EXPECT_TRUE(has_problem("lies outside the 500 x 32 table"));
}

TEST_F(ValidateTest, FindsRankAndPlacementProblems) {
  plan_["tables"][0]["shards"][0]["rank"] = 9;
  plan_["tables"][0]["ranks"] = {9};
  plan_["tables"][0]["shards"][0]["placement"] = "rank:9/cuda:1";
  EXPECT_TRUE(has_problem("tables[0].shards[0].rank: 9 is out of range [0, 4)"));
  SetUp();
  plan_["tables"][1]["shards"][0]["placement"] = "rank:3/cuda:3";
  EXPECT_TRUE(has_problem("tables[1].shards[0].placement"));
  SetUp();
  plan_["tables"][2]["ranks"] = {2, 2};
  EXPECT_TRUE(has_problem("tables[2].ranks: does not list the shards' ranks in order"));
}

TEST_F(ValidateTest, FindsMissingDuplicateAndUnknownTables) {
  json second_b = plan_["tables"][1];
  plan_["tables"].erase(2);
  plan_["tables"].push_back(second_b);
  plan_["tables"][0]["name"] = "zzz";
  auto found = problems();
  EXPECT_TRUE(has_problem("table \"zzz\" is not in the tables file"));
  EXPECT_TRUE(has_problem("table \"b\" appears more than once"));
  EXPECT_TRUE(has_problem("table \"a\" is not in the plan"));
  EXPECT_TRUE(has_problem("table \"c\" is not in the plan"));
}

TEST_F(ValidateTest, FindsShapeMismatchAndUnknownShardingType) {
  plan_["tables"][0]["dim"] = 128;
  plan_["tables"][1]["sharding_type"] = "diagonal";
  EXPECT_TRUE(has_problem("is 1000 x 128 in the plan but 1000 x 64 in the tables file"));
  EXPECT_TRUE(has_problem("unknown \"diagonal\""));
}

TEST_F(ValidateTest, FindsDevicesOverTheirMemory) {
  for (auto& t : plan_["tables"]) {
    t["ranks"] = {0};
    t["shards"][0]["rank"] = 0;
    t["shards"][0]["placement"] = "rank:0/cuda:0";
  }
  plan_["memory_per_device_bytes"] = 300000;  // the three tables need 256000 + 64000 + 128000
  recount_devices();
  EXPECT_TRUE(
      has_problem("device 0: shards need 437.50 KiB (448000 bytes), over its usable 292.97 KiB (300000 bytes)"));
  plan_["memory_per_device_bytes"] = 448000;
  EXPECT_TRUE(problems().empty());
  plan_["optimizer"] = "adam";  // three times the bytes
  EXPECT_TRUE(has_problem("device 0: shards need"));
}

// A plan's element type is one shard-plan knows and the tables file's (issue 43: "fp8" passed).
TEST_F(ValidateTest, FindsAnUnknownOrMismatchedDtype) {
  plan_["tables"][0]["dtype"] = "fp8";
  EXPECT_TRUE(has_problem("tables[0].dtype: unknown \"fp8\" (expected fp32 or fp16)"));
  plan_["tables"][0]["dtype"] = "fp16";
  EXPECT_TRUE(has_problem("tables[0].dtype: table \"a\" is fp16 in the plan but fp32 in the tables file"));
}

TEST_F(ValidateTest, FindsADevicesSummaryThatDisagreesWithTheShards) {
  plan_["devices"][1]["memory_bytes"] = 12345;
  EXPECT_TRUE(has_problem("devices[1].memory_bytes: says 12345"));
}

TEST_F(ValidateTest, StructuralErrorsAreBadInput) {
  auto expect_input_error = [&](const std::string& fragment) {
    try {
      validate_plan_json(plan_, tables_, "plan.json");
      ADD_FAILURE() << "expected InputError containing " << fragment;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  plan_["tables"][1]["shards"][0]["shard_offsets"] = "zero";
  expect_input_error("plan.json: tables[1].shards[0].shard_offsets: must be an array [rows, cols]");
  SetUp();
  plan_.erase("num_devices");
  expect_input_error("plan.json: num_devices: missing required field");
  SetUp();
  plan_["format"] = "other/2";
  expect_input_error("unsupported plan format");
  // Without these any JSON object with a few right fields passed for a plan (issue 43).
  for (const char* required : {"format", "devices"}) {
    SetUp();
    plan_.erase(required);
    expect_input_error(fmt::format("plan.json: {}: missing required field", required));
  }
  SetUp();
  plan_["tables"][0].erase("dtype");
  expect_input_error("plan.json: tables[0].dtype: missing required field");
  SetUp();
  plan_ = json::array();
  expect_input_error("a plan must be a JSON object");
}

}  // namespace
}  // namespace shardplan
