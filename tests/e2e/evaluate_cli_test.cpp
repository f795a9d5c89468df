// shard-plan evaluate: scores any plan file, measures it with --measure, refuses invalid plans.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kTables = source_path("tests/fixtures/tables_small.json");

std::string plan_for(TempDir& dir, const std::string& algo) {
  std::string path = dir.path(algo + ".json");
  CliResult r =
      run_cli({"--tables", kTables, "--gpus", "4", "--mem-per-gpu", "1GiB", "--algo", algo, "-q", "-o", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

TEST(EvaluateCli, AgreesWithThePlansOwnScores) {
  TempDir dir;
  std::string plan = plan_for(dir, "neuroshard");
  CliResult r = run_cli({"evaluate", "--plan", plan, "--tables", kTables, "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  auto written = nlohmann::json::parse(read_file(plan));
  ASSERT_EQ(doc["devices"].size(), 4u);
  EXPECT_EQ(doc["algorithm"], "neuroshard");
  EXPECT_NEAR(doc["predicted"]["max_total_ms"].get<double>(), written["summary"]["max_total_ms"].get<double>(), 1e-6);
  for (std::size_t rank = 0; rank < 4; ++rank) {
    EXPECT_NEAR(doc["devices"][rank]["compute_ms"].get<double>(), written["devices"][rank]["compute_ms"].get<double>(),
                1e-6);
    EXPECT_EQ(doc["devices"][rank]["memory_bytes"], written["devices"][rank]["memory_bytes"]);
  }
  EXPECT_FALSE(doc.contains("measured"));
}

TEST(EvaluateCli, TextReportNamesTheBoundingDevice) {
  TempDir dir;
  CliResult r =
      run_cli({"evaluate", "--plan", plan_for(dir, "size_greedy"), "--tables", kTables, "--model", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plan: size_greedy on 4 GPUs, scored by analytic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted: max"), std::string::npos) << r.out;
}

TEST(EvaluateCli, InvalidPlanIsBadInputAndListsProblems) {
  TempDir dir;
  auto doc = nlohmann::json::parse(read_file(plan_for(dir, "dim_greedy")));
  doc["tables"][0]["shards"][0]["rank"] = 9;
  std::string broken = dir.path("broken.json");
  std::ofstream(broken) << doc.dump();
  CliResult r = run_cli({"evaluate", "--plan", broken, "--tables", kTables});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the plan is invalid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank: 9 is out of range"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(EvaluateCli, MeasureTimesEveryDeviceOnThisMachine) {
  TempDir dir;
  CliResult r = run_cli({"evaluate", "--plan", plan_for(dir, "neuroshard"), "--tables", kTables, "--measure", "--json",
                         "-q", "--measure-batch-size", "256", "--measure-iterations", "2"});
  if (r.exit_code == 2 && r.err.find("without LibTorch") != std::string::npos) GTEST_SKIP() << "no LibTorch";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("measured"));
  EXPECT_EQ(doc["measured"]["devices"], 4);
  double max = 0;
  for (const auto& d : doc["devices"]) {
    double ms = d["measured_compute_ms"].get<double>();
    if (d["num_shards"].get<int>() > 0) {
      EXPECT_GT(ms, 0.0);
    }
    max = std::max(max, ms);
  }
  EXPECT_DOUBLE_EQ(doc["measured"]["max_compute_ms"].get<double>(), max);
}

TEST(EvaluateCli, DevicesOverTheMeasurementCapAreSkippedNotAttempted) {
  TempDir dir;
  CliResult r = run_cli({"evaluate", "--plan", plan_for(dir, "neuroshard"), "--tables", kTables, "--measure", "--json",
                         "-q", "--measure-mem-cap", "1KiB"});
  if (r.exit_code == 2 && r.err.find("without LibTorch") != std::string::npos) GTEST_SKIP() << "no LibTorch";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["measured"]["devices"], 0);
  EXPECT_NE(doc["devices"][0]["not_measured"].get<std::string>().find("over the measurement cap"), std::string::npos);
}

TEST(EvaluateCli, BadMeasurementFlagsAreBadUsage) {
  TempDir dir;
  std::string plan = plan_for(dir, "dim_greedy");
  CliResult r = run_cli({"evaluate", "--plan", plan, "--tables", kTables, "--measure-iterations", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measure-iterations: must be in [1, 10000], got 0"), std::string::npos) << r.err;
  r = run_cli({"evaluate", "--plan", plan, "--tables", kTables, "--measure-mem-cap", "lots"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measure-mem-cap"), std::string::npos) << r.err;
  r = run_cli({"evaluate", "--plan", plan, "--tables", kTables, "--measure-rounds", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measure-rounds: must be in [1, 1000], got 0"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shardplan::e2e
