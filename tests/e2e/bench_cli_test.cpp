#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kTasks = source_path("data/tasks/paper-4gpu.json");

TEST(BenchCli, JsonHasTheDocumentedShape) {
  CliResult r = run_cli({"bench", "--tasks", kTasks, "--algos", "neuroshard,torchrec,dim_greedy", "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);  // stdout holds nothing but the JSON
  EXPECT_EQ(doc["task_set"], "paper-4gpu");
  ASSERT_EQ(doc["algorithms"].size(), 3u);
  int wins = 0;
  for (const auto& [name, a] : doc["algorithms"].items()) {
    for (const char* key : {"mean_cost_ms", "valid", "tasks", "median_plan_seconds", "max_plan_seconds", "wins"}) {
      EXPECT_TRUE(a.contains(key)) << name << " lacks " << key;
    }
    EXPECT_EQ(a["tasks"], 100);
    EXPECT_LE(a["median_plan_seconds"].get<double>(), a["max_plan_seconds"].get<double>());
    wins += a["wins"].get<int>();
  }
  EXPECT_GE(wins, 100);  // every task has at least one winner
  EXPECT_EQ(doc["algorithms"]["neuroshard"]["valid"], 100);
  EXPECT_LT(doc["algorithms"]["neuroshard"]["mean_cost_ms"].get<double>(),
            doc["algorithms"]["dim_greedy"]["mean_cost_ms"].get<double>());
}

TEST(BenchCli, UnknownAlgorithmIsBadUsage) {
  CliResult r = run_cli({"bench", "--tasks", kTasks, "--algos", "neuroshard,magic"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--algos: unknown planner \"magic\""), std::string::npos) << r.err;
}

// Every entry point lists every planner it takes (#62): bench takes TorchRec's own planner too.
TEST(BenchCli, HelpListsEveryPlannerItTakes) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"bench", "--help"}, {"plan", "--help"}}) {
    CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto* names : {&planner_names(), &measuring_planner_names(), &external_planner_names()}) {
      for (const std::string& name : *names) EXPECT_NE(r.out.find(name), std::string::npos) << args[0] << ": " << name;
    }
  }
}

// gen-tasks --drift (issue 61): the shipped set after a seeded drift, for benchmarking replanning.
TEST(GenTasksCli, DriftWritesTheSameTasksDrifted) {
  TempDir dir;
  const auto drift_to = [&](const std::string& name) {
    return run_cli({"gen-tasks", "--drift", kTasks, "--pool", source_path("data/pool.json"), "--seed", "3",
                    "--drift-grow", "0.2", "-o", dir.path(name)});
  };
  CliResult r = drift_to("a.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("task set paper-4gpu-drift: 100 task(s) on 4 GPUs x 4.00 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tables retired"), std::string::npos) << r.out;
  auto doc = nlohmann::json::parse(read_file(dir.path("a.json")));
  auto old = nlohmann::json::parse(read_file(kTasks));
  EXPECT_EQ(doc["name"], "paper-4gpu-drift");
  EXPECT_EQ(doc["num_devices"], old["num_devices"]);
  ASSERT_EQ(doc["tasks"].size(), old["tasks"].size());
  // A surviving table keeps its name and width.
  std::map<std::string, int> old_dims;
  for (const auto& t : old["tasks"][0]["tables"]) old_dims[t["name"].get<std::string>()] = t["dim"].get<int>();
  int kept = 0;
  for (const auto& t : doc["tasks"][0]["tables"]) {
    auto found = old_dims.find(t["name"].get<std::string>());
    if (found == old_dims.end()) continue;
    EXPECT_EQ(t["dim"].get<int>(), found->second);
    kept += 1;
  }
  EXPECT_GT(kept, 0);
  ASSERT_EQ(drift_to("b.json").exit_code, 0);
  EXPECT_EQ(read_file(dir.path("a.json")), read_file(dir.path("b.json")));  // the seed decides
}

TEST(PlanCliSearch, SameInputSamePlanForAnyThreadCount) {
  TempDir dir;
  const std::string tables = source_path("data/examples/tables.json");
  std::string one = dir.path("one.json");
  std::string two = dir.path("two.json");
  ASSERT_EQ(run_cli({"--tables", tables, "--gpus", "16", "--threads", "1", "-q", "-o", one}).exit_code, 0);
  ASSERT_EQ(run_cli({"--tables", tables, "--gpus", "16", "--threads", "2", "-q", "-o", two}).exit_code, 0);
  EXPECT_EQ(read_file(one), read_file(two));                                                 // byte-identical
  EXPECT_FALSE(nlohmann::json::parse(read_file(one))["summary"]["max_total_ms"].is_null());  // scored by the model
}

}  // namespace
}  // namespace shardplan::e2e
