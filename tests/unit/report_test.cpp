#include <gtest/gtest.h>

#include "shardplan/planners/planner.hpp"
#include "shardplan/report/report.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

Plan plan_on(int devices) {
  Cluster cluster;
  cluster.num_devices = devices;
  return make_planner("size_greedy", testing::planner_config())->plan(testing::varied_tables(300), cluster);
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST(Report, ListsEveryDeviceOfASmallCluster) {
  std::string report = format_report(plan_on(8), ReportOptions{});
  EXPECT_NE(report.find("plan: size_greedy on 8 GPUs"), std::string::npos) << report;
  EXPECT_NE(report.find("cost: not predicted"), std::string::npos);
  EXPECT_EQ(report.find("not shown"), std::string::npos);
  EXPECT_GE(count_lines(report), 8 + 2);
}

TEST(Report, SummarisesLargeClustersUnlessAskedForEverything) {
  Plan plan = plan_on(128);
  std::string compact = format_report(plan, ReportOptions{false, 32});
  std::string full = format_report(plan, ReportOptions{true, 32});
  EXPECT_NE(compact.find("(96 devices not shown; a full report lists all)"), std::string::npos) << compact;
  ReportOptions flags;
  flags.full_report = "--full-report";
  EXPECT_NE(format_report(plan, flags).find("(96 devices not shown; --full-report lists all)"), std::string::npos);
  EXPECT_LT(count_lines(compact), 45);
  EXPECT_GE(count_lines(full), 128 + 2);
}

TEST(Report, ShowsPredictedCostsAndTheBoundingDevice) {
  Plan plan = plan_on(4);
  plan.cost_model = "m";
  plan.device_costs = std::vector<DeviceCost>{{1, 0, 0}, {4, 1, 1}, {2, 0, 0}, {1, 0, 0}};
  std::string report = format_report(plan, ReportOptions{});
  EXPECT_NE(report.find("cost (m): max 6.000 ms on rank 1, mean 2.500 ms, imbalance 2.400"), std::string::npos)
      << report;
}

TEST(Report, SaysWhichBaselineThePlanStartedFrom) {
  Plan plan = plan_on(4);
  EXPECT_EQ(format_report(plan, ReportOptions{}).find("start:"), std::string::npos);
  plan.search = SearchSummary{};
  plan.search->started_from = "torchrec_cw32";
  plan.search->search_max_ms = 12.5;
  EXPECT_NE(
      format_report(plan, ReportOptions{})
          .find("start: torchrec_cw32's plan, after the sharding-type pass, scored below the search's own (12.500 ms)"),
      std::string::npos);
  plan.search->search_max_ms = 0.0;
  EXPECT_NE(format_report(plan, ReportOptions{})
                .find("start: torchrec_cw32's plan; the search found none (planning without baseline starts "
                      "shows why)"),
            std::string::npos);
  ReportOptions flags;
  flags.without_baseline_starts = "--no-baseline-starts";
  EXPECT_NE(format_report(plan, flags).find("the search found none (--no-baseline-starts shows why)"),
            std::string::npos);
}

TEST(Report, SaysTheTimeLimitCutTheSearchShort) {
  Plan plan = plan_on(4);
  plan.search = SearchSummary{};
  plan.search->steps = 3;
  plan.search->step_budget = 10;
  plan.search->time_limit_seconds = 5;
  EXPECT_EQ(format_report(plan, ReportOptions{}).find("cut the search short"), std::string::npos);
  plan.search->cut_short = true;
  EXPECT_NE(format_report(plan, ReportOptions{})
                .find("note: the time limit of 5 s cut the search short after 3 of 10 split steps"),
            std::string::npos);
}

TEST(Report, NamesTheBoundingDeviceAndItsCostDrivers) {
  Plan plan = plan_on(4);
  plan.cost_model = "m";
  plan.device_costs = std::vector<DeviceCost>{{1, 0, 0}, {4, 1, 1}, {2, 0, 0}, {1, 0, 0}};
  PlanAnalysis analysis;
  analysis.bound = BoundingDevice{1, {{"wide", 128, 20.0, 3.5}, {"deep", 16, 4.3, 1.25}}};
  std::string report = format_report(plan, ReportOptions{}, analysis);
  EXPECT_NE(report.find("bounded by rank 1 (compute 4.000 ms, all-to-all 2.000 ms): its largest cost drivers are "
                        "tables wide (cols 128, pooling 20.0), deep (cols 16, pooling 4.3); without each its total "
                        "falls 3.500, 1.250 ms\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(format_bounding_device(BoundingDevice{2, {}}, DeviceCost{}),
            "bounded by rank 2 (compute 0.000 ms, all-to-all 0.000 ms): it holds no tables\n");
}

TEST(Report, ComparesWithTheBestBaselineAndListsFailures) {
  std::vector<BaselineOutcome> baselines = {{"torchrec", 200.0, ""},
                                            {"size_greedy", std::nullopt, "t9 is larger than a device"},
                                            {"dim_greedy", 160.0, ""},
                                            {"lookup_greedy", std::nullopt, "t9 is larger than a device"},
                                            {"random", std::nullopt, "bad luck"}};
  EXPECT_EQ(format_baseline_comparison(baselines, 120.0),
            "vs best baseline: dim_greedy max 160.000 ms -> this plan 120.000 ms (25.0% lower)\n"
            "baselines size_greedy, lookup_greedy: no plan (t9 is larger than a device)\n"
            "baseline random: no plan (bad luck)\n");
  EXPECT_EQ(format_baseline_comparison({{"torchrec", 100.0, ""}}, 100.01),
            "vs best baseline: torchrec max 100.000 ms -> this plan 100.010 ms (the same)\n");
  EXPECT_EQ(format_baseline_comparison({{"torchrec", 100.0, ""}}, 110.0),
            "vs best baseline: torchrec max 100.000 ms -> this plan 110.000 ms (10.0% higher)\n");
  EXPECT_EQ(format_baseline_comparison({{"torchrec", std::nullopt, "infeasible"}}, 1.0),
            "vs baselines: none of them found a plan\nbaseline torchrec: no plan (infeasible)\n");
  EXPECT_EQ(format_baseline_comparison({}, 1.0), "");
  // Under a time limit: baselines the limit left no time for are not compared, not "no plan".
  EXPECT_EQ(format_baseline_comparison(
                {{"torchrec", std::nullopt, "torchrec: the time limit passed before it finished", true},
                 {"size_greedy", std::nullopt, "the time limit passed before it ran", true}},
                1.0),
            "vs baselines: none compared, the time limit passed first\n"
            "baseline torchrec: not compared (torchrec: the time limit passed before it finished)\n"
            "baseline size_greedy: not compared (the time limit passed before it ran)\n");

  Plan plan = plan_on(4);
  plan.device_costs = std::vector<DeviceCost>{{1, 0, 0}, {4, 1, 1}, {2, 0, 0}, {1, 0, 0}};
  PlanAnalysis analysis;
  analysis.baselines = baselines;
  std::string report = format_report(plan, ReportOptions{}, analysis);
  EXPECT_NE(report.find("dim_greedy max 160.000 ms -> this plan 6.000 ms (96.2% lower)"), std::string::npos) << report;
}

TEST(Report, CountsShardsBySharding) {
  Plan plan = plan_on(2);
  std::string report = format_report(plan, ReportOptions{});
  EXPECT_NE(report.find("tw/cw/rw"), std::string::npos) << report;
}

}  // namespace
}  // namespace shardplan
