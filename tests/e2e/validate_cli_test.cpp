#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kSmall = source_path("tests/fixtures/tables_small.json");

class ValidateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_path_ = dir_.path("plan.json");
    CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "-o", plan_path_, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TempDir dir_;
  std::string plan_path_;
};

TEST_F(ValidateCli, ValidPlanExitsZero) {
  CliResult r = run_cli({"validate", "--plan", plan_path_, "--tables", kSmall});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(ValidateCli, InvalidPlanExitsOneAndListsEveryProblem) {
  auto plan = nlohmann::json::parse(read_file(plan_path_));
  plan["tables"][0]["shards"][0]["rank"] = 7;  // out of range, and no longer matches ranks/placement
  plan["tables"].erase(1);                     // a table missing
  std::string tampered = dir_.write("tampered.json", plan.dump());
  CliResult r = run_cli({"validate", "--plan", tampered, "--tables", kSmall});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("INVALID"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tables[0].shards[0].rank: 7 is out of range [0, 4)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tables[0].shards[0].placement"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tables[0].ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("table \"t1\" is not in the plan"), std::string::npos) << r.out;
}

TEST_F(ValidateCli, UnreadablePlanExitsTwo) {
  std::string broken = dir_.write("broken.json", "{\"format\": \"shard-plan/1\", \"tables\": ");
  CliResult r = run_cli({"validate", "--plan", broken, "--tables", kSmall});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.json: invalid JSON"), std::string::npos) << r.err;
  std::string wrong_type = dir_.write(
      "wrong.json", R"({"format": "shard-plan/1", "num_devices": "four", "memory_per_device_bytes": 1, "tables": []})");
  r = run_cli({"validate", "--plan", wrong_type, "--tables", kSmall});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("wrong.json: num_devices: must be an integer"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shardplan::e2e
