// The report's analysis lines and the --report chart, as a user sees them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kSmall = source_path("tests/fixtures/tables_small.json");
// The analytic model: these tests are about the report and the chart, not the model, and so also run in
// builds without LibTorch to read the bundled one.
const std::vector<std::string> kPlanSmall = {"--tables", kSmall, "--model", "analytic"};

std::vector<std::string> plan_args(std::vector<std::string> extra) {
  extra.insert(extra.begin(), kPlanSmall.begin(), kPlanSmall.end());
  return extra;
}

std::string line_starting(const std::string& text, const std::string& prefix) {
  auto at = text.find(prefix);
  return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
}

TEST(ReportCli, NamesTheBoundingDeviceAndComparesWithTheBaselines) {
  TempDir dir;
  auto plan = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--gpus", "8", "-o", dir.path("plan.json")});
    CliResult r = run_cli(plan_args(extra));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  std::string first = plan({});
  EXPECT_TRUE(std::regex_search(first, std::regex("bounded by rank [0-9]+ \\(compute [0-9.]+ ms, all-to-all [0-9.]+ "
                                                  "ms\\): its largest cost drivers are tables t[0-9]+ "
                                                  "\\(cols [0-9]+, pooling [0-9.]+\\)")))
      << first;
  EXPECT_TRUE(std::regex_search(first, std::regex("vs best baseline: [a-z_]+ max [0-9.]+ ms -> this plan [0-9.]+ ms "
                                                  "\\(([0-9.]+% (lower|higher)|the same)\\)")))
      << first;
  // Deterministic: the baselines and the analysis do not depend on the run.
  std::string second = plan({});
  EXPECT_EQ(line_starting(first, "bounded by"), line_starting(second, "bounded by"));
  EXPECT_EQ(line_starting(first, "vs best baseline"), line_starting(second, "vs best baseline"));

  EXPECT_EQ(plan({"--no-compare"}).find("vs best baseline"), std::string::npos);
  std::string baseline = plan({"--algo", "torchrec"});
  EXPECT_EQ(baseline.find("vs best baseline"), std::string::npos);
  EXPECT_NE(baseline.find("bounded by rank"), std::string::npos);
}

TEST(ReportCli, ABaselineWithoutAPlanIsReportedNotFatal) {
  // t4 and t5 (640 MB each) do not fit a 400 MB device whole: only column-wise splits place them.
  TempDir dir;
  CliResult r = run_cli(plan_args({"--gpus", "8", "--mem-per-gpu", "400MB", "-o", dir.path("plan.json")}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("baselines? [a-z0-9_, ]*size_greedy[a-z0-9_, ]*: no plan \\(table \"t[45]\"")))
      << r.out;
}

// Renders an SVG as an image viewer would (librsvg), returning the PNG's bytes ("" when it fails).
std::string render_png(const std::string& svg, const std::string& png) {
  std::string command = "rsvg-convert -f png -o '" + png + "' '" + svg + "'";
  return std::system(command.c_str()) == 0 ? read_file(png) : "";
}

uint32_t big_endian(const std::string& bytes, std::size_t at) {
  uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

TEST(ReportCli, ChartRendersToANonTrivialImage) {
  TempDir dir;
  std::string chart = dir.path("out.svg");
  CliResult r = run_cli(plan_args({"--gpus", "8", "-o", dir.path("plan.json"), "--report", chart, "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // --quiet silences the report, not the chart
  std::string svg = read_file(chart);
  ASSERT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 200);
  EXPECT_EQ(dir.files().size(), 2u);  // the plan and the chart, no temporary left behind

  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) GTEST_SKIP() << "rsvg-convert not installed";
  std::smatch size;
  ASSERT_TRUE(std::regex_search(svg, size, std::regex("width=\"([0-9]+)\" height=\"([0-9]+)\"")));
  std::string png = render_png(chart, dir.path("out.png"));
  ASSERT_GT(png.size(), 24u) << "rsvg-convert could not render the chart";
  ASSERT_EQ(png.substr(1, 3), "PNG");
  EXPECT_EQ(big_endian(png, 16), std::stoul(size[1]));  // IHDR: the image has the chart's size
  EXPECT_EQ(big_endian(png, 20), std::stoul(size[2]));
  // One flat colour deflates to almost nothing; bars, lines and text cannot. Compare with a blank page of
  // the same size rendered the same way rather than trusting a fixed byte count alone.
  std::string blank =
      dir.write("blank.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + size[1].str() + "\" height=\"" +
                                 size[2].str() + "\"><rect width=\"100%\" height=\"100%\" fill=\"white\"/></svg>\n");
  std::string blank_png = render_png(blank, dir.path("blank.png"));
  ASSERT_FALSE(blank_png.empty());
  EXPECT_GT(png.size(), 20'000u);
  EXPECT_GT(png.size(), 5 * blank_png.size()) << png.size() << " vs blank " << blank_png.size();
}

TEST(ReportCli, RefusesAChartPathThatIsNotSvg) {
  TempDir dir;
  CliResult r = run_cli(plan_args({"--gpus", "4", "-o", dir.path("plan.json"), "--report", "chart.png"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--report chart.png"), std::string::npos) << r.err;
  EXPECT_TRUE(dir.files().empty());  // refused before planning
}

}  // namespace
}  // namespace shardplan::e2e
