#include "shardplan/report/svg_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "test_tables.hpp"

namespace shardplan {
namespace {

Plan costed_plan(int devices) {
  Cluster cluster;
  cluster.num_devices = devices;
  auto config = testing::planner_config();
  auto tables = testing::varied_tables(300);
  Plan plan = make_planner("size_greedy", config)->plan(tables, cluster);
  plan.device_costs = score_plan(plan, tables, *config.cost_model);
  plan.cost_model = config.cost_model->name();
  return plan;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

double attribute(const std::string& svg, const std::string& name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex(" " + name + "=\"([0-9.]+)\""))) << name;
  return std::stod(m[1]);
}

// Not a full XML check (the e2e test has librsvg parse and render it): one root, balanced elements.
void expect_well_formed(const std::string& svg) {
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_EQ(count(svg, "<title>"), count(svg, "</title>"));
  std::smatch bad;
  EXPECT_FALSE(std::regex_search(svg, bad, std::regex("\\b(nan|inf)\\b", std::regex::icase))) << bad.str();
}

TEST(SvgReport, DrawsOneBarGroupPerDevice) {
  for (int devices : {1, 8, 128}) {
    std::string svg = render_svg_report(costed_plan(devices), PlanAnalysis{});
    expect_well_formed(svg);
    EXPECT_EQ(count(svg, "<g class=\"device\""), devices);
    EXPECT_NE(svg.find("predicted ms per step"), std::string::npos);
    EXPECT_NE(svg.find("memory per device against usable capacity"), std::string::npos);
    EXPECT_NE(svg.find("imbalance"), std::string::npos);
  }
}

TEST(SvgReport, WidthGrowsWithTheClusterWithinBounds) {
  double small = attribute(render_svg_report(costed_plan(8), PlanAnalysis{}), "width");
  double large = attribute(render_svg_report(costed_plan(128), PlanAnalysis{}), "width");
  double huge = attribute(render_svg_report(costed_plan(1024), PlanAnalysis{}), "width");
  EXPECT_GE(small, 600);
  EXPECT_GT(large, small);
  EXPECT_LE(huge, 2000);
}

TEST(SvgReport, EscapesTextFromInputs) {
  Plan plan = costed_plan(4);
  plan.algorithm = "a<b>&\"c\"";
  PlanAnalysis analysis;
  analysis.bound = BoundingDevice{0, {{"t<script>&", 4, 1.0, 1.0}}};
  analysis.baselines = {{"x'y", 1e6, ""}};
  std::string svg = render_svg_report(plan, analysis);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("t&lt;script&gt;&amp;"), std::string::npos);
  EXPECT_NE(svg.find("x&apos;y"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("a<b>"), std::string::npos);
}

TEST(SvgReport, DrawsMemoryAloneWhenCostsWereNotPredicted) {
  Plan plan = costed_plan(8);
  plan.device_costs.reset();
  std::string svg = render_svg_report(plan, PlanAnalysis{});
  expect_well_formed(svg);
  EXPECT_NE(svg.find("costs were not predicted"), std::string::npos);
  EXPECT_EQ(svg.find("predicted ms per step"), std::string::npos);
  EXPECT_EQ(count(svg, "<g class=\"device\""), 8);
}

TEST(SvgReport, SurvivesNonFiniteAndZeroCosts) {
  Plan plan = costed_plan(4);
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  plan.device_costs = std::vector<DeviceCost>{{nan, 1, 1}, {inf, 0, 0}, {0, 0, 0}, {-1, 0, 0}};
  expect_well_formed(render_svg_report(plan, PlanAnalysis{}));
  plan.device_costs = std::vector<DeviceCost>(4);
  expect_well_formed(render_svg_report(plan, PlanAnalysis{}));
}

TEST(SvgReport, NamesTheBoundingDeviceAndTheBestBaseline) {
  Plan plan = costed_plan(8);
  PlanAnalysis analysis;
  analysis.bound = BoundingDevice{3, {{"wide", 128, 20.0, 3.5}, {"deep", 16, 4.3, 1.25}}};
  analysis.baselines = {{"torchrec", 1e4, ""}, {"dim_greedy", std::nullopt, "infeasible"}};
  std::string svg = render_svg_report(plan, analysis);
  EXPECT_NE(svg.find("rank 3 bounds the step; its largest cost drivers: wide, deep"), std::string::npos);
  EXPECT_NE(svg.find("best baseline torchrec: max 10000.000 ms"), std::string::npos);
}

}  // namespace
}  // namespace shardplan
