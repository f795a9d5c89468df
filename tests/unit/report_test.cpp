#include <gtest/gtest.h>

#include "shardplan/planner.hpp"
#include "shardplan/report.hpp"
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
  EXPECT_NE(compact.find("(96 devices not shown; --full-report lists all)"), std::string::npos) << compact;
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

}  // namespace
}  // namespace shardplan
