#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kSmall = source_path("tests/fixtures/tables_small.json");

// The fixture's tables after a drift: t0 retired, t5's traffic four times, t4 grown, a table added.
nlohmann::json drifted_tables() {
  auto doc = nlohmann::json::parse(read_file(kSmall));
  auto& tables = doc["tables"];
  tables.erase(0);
  for (auto& t : tables) {
    if (t["name"] == "t5") t["pooling_factor"] = 133.0;
    if (t["name"] == "t4") t["rows"] = 12000000;
  }
  tables.push_back({{"name", "t12"}, {"rows", 300000}, {"dim", 64}, {"pooling_factor", 20.0}});
  return doc;
}

class ReplanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    old_plan_ = dir_.path("old.json");
    CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "--model", "analytic", "-o", old_plan_, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    tables_ = dir_.write("now.json", drifted_tables().dump());
  }
  CliResult replan(const std::string& out, const std::string& budget) {
    return run_cli({"--tables", tables_, "--gpus", "4", "--model", "analytic", "--from", old_plan_, "--move-budget",
                    budget, "-o", out});
  }
  TempDir dir_;
  std::string old_plan_;
  std::string tables_;
};

TEST_F(ReplanCli, RecordsItsMovesAndValidatesAgainstTheOldPlan) {
  const std::string out = dir_.path("new.json");
  CliResult r = replan(out, "10%");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("replan from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 added"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 dropped"), std::string::npos) << r.out;
  const auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["algorithm"], "neuroshard_replan");
  EXPECT_LE(plan["replan"]["moved_bytes"].get<int64_t>(), plan["replan"]["move_budget_bytes"].get<int64_t>());
  EXPECT_EQ(plan["replan"]["dropped_tables"], nlohmann::json::array({"t0"}));
  CliResult check = run_cli({"validate", "--plan", out, "--tables", tables_, "--from", old_plan_});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("from "), std::string::npos) << check.out;

  // A plan that claims fewer bytes than it moves, or moves past its budget, fails validation.
  auto tampered = plan;
  tampered["replan"]["move_budget_bytes"] = 0;
  tampered["replan"]["moved_bytes"] = 0;
  const std::string path = dir_.write("tampered.json", tampered.dump());
  check = run_cli({"validate", "--plan", path, "--tables", tables_, "--from", old_plan_});
  if (plan["replan"]["moved_bytes"].get<int64_t>() > 0) {
    EXPECT_EQ(check.exit_code, 1) << check.out;
    EXPECT_NE(check.out.find("replan.moved_bytes: claims 0 bytes"), std::string::npos) << check.out;
    EXPECT_NE(check.out.find("over its budget"), std::string::npos) << check.out;
  }
}

TEST_F(ReplanCli, ABudgetOfNothingMovesNothingAndTheSameInputGiveTheSameFile) {
  const std::string a = dir_.path("a.json");
  const std::string b = dir_.path("b.json");
  ASSERT_EQ(replan(a, "0").exit_code, 0);
  ASSERT_EQ(run_cli({"--tables", tables_, "--gpus", "4", "--model", "analytic", "--from", old_plan_, "--move-budget",
                     "0", "--threads", "1", "-o", b, "--quiet"})
                .exit_code,
            0);
  EXPECT_EQ(read_file(a), read_file(b));
  const auto plan = nlohmann::json::parse(read_file(a));
  EXPECT_EQ(plan["replan"]["moved_bytes"], 0);
}

TEST_F(ReplanCli, RefusesBadBudgetsAndNeverWritesOverTheOldPlan) {
  CliResult r = replan(dir_.path("x.json"), "12 parsecs");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--move-budget"), std::string::npos) << r.err;
  r = replan(dir_.path("x.json"), "120%");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("[0, 100]"), std::string::npos) << r.err;
  const std::string before = read_file(old_plan_);
  r = replan(old_plan_, "10%");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read_file(old_plan_), before);
  r = run_cli({"--tables", tables_, "--gpus", "4", "--move-budget", "1GiB", "-o", dir_.path("y.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("add --from"), std::string::npos) << r.err;
  r = run_cli(
      {"--tables", tables_, "--gpus", "8", "--model", "analytic", "--from", old_plan_, "-o", dir_.path("z.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the old plan is for 4 GPUs"), std::string::npos) << r.err;
}

TEST_F(ReplanCli, WhatNoLongerFitsWithinTheBudgetExitsThree) {
  // The same tables on GPUs a byte smaller than the old plan's fullest device: it must shed a shard.
  const auto old_plan = nlohmann::json::parse(read_file(old_plan_));
  const int64_t most = old_plan["summary"]["max_memory_bytes"].get<int64_t>();
  const std::string memory = std::to_string(most - 1);
  CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "--mem-per-gpu", memory, "--model", "analytic", "--from",
                         old_plan_, "--move-budget", "0", "-o", dir_.path("n.json")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("would do"), std::string::npos) << r.err;
  r = run_cli({"--tables", kSmall, "--gpus", "4", "--mem-per-gpu", memory, "--model", "analytic", "--from", old_plan_,
               "--move-budget", "100%", "-o", dir_.path("n.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace shardplan::e2e
