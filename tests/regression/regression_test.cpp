// The plan-quality regression (ctest label `regression`): every task set in data/tasks/ planned by every
// algorithm with each bundled model the planner defaults to: the GPU model on its hardware profile's
// links (what planning without --model uses) and the CPU model (what measuring on this machine's CPU
// uses). It fails when the default planner's predicted cost is above any other algorithm's on any task or
// its mean not below theirs, when it is more than 0.5% above the recorded result or finds fewer valid
// plans, or when any plan fails validation. A mutation test feeds the same checks a planner with its
// search turned off and expects them to fail, so the suite cannot silently stop guarding.
//
// Re-record on purpose (a changed model or search then shows up as a reviewed diff of recorded.json):
//   ./build/tests/shardplan_regression_tests --record
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "shardplan/bench/bench.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/torch/model_files.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultPlanner = "neuroshard";
constexpr double kTolerance = 0.005;
const fs::path kSource = SHARDPLAN_SOURCE_DIR;
const fs::path kRecorded = kSource / "tests" / "regression" / "recorded.json";
bool g_record = false;

std::vector<fs::path> task_sets() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kSource / "data" / "tasks")) {
    if (entry.path().extension() == ".json") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A bundled model as the planner uses it: on its hardware profile's links when it has one (empty: the
// model's own all-to-all).
struct BundledModel {
  const char* name;
  const char* hardware;
};
const BundledModel kModels[] = {{kGpuModelName, kGpuModelHardware}, {kCpuModelName, ""}};

// A bundled model's identity: its meta.json, which records the training data, architecture and metrics.
std::string model_version(const std::string& name) {
  std::ifstream in(kSource / "models" / name / "meta.json", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return fmt::format("{:016x}", fnv1a_hash(text));
}

std::shared_ptr<const CostModel> bundled_model(const BundledModel& which, int devices_per_host) {
  std::unique_ptr<NeuralCostModel> model = load_cost_model((kSource / "models" / which.name).string());
  model->set_devices_per_host(devices_per_host);
  if (*which.hardware != '\0') {
    CommFabric fabric = fabric_of(load_hardware_profile(which.hardware), 0);
    fabric.devices_per_host = devices_per_host;
    model->plan_for_hardware(std::move(fabric));
  }
  return model;
}

BenchResult bench(const fs::path& path, const NeuroShardConfig& search, const BundledModel& which) {
  const TaskSet set = load_task_set(path.string());
  PlannerConfig config;
  config.cost_model = bundled_model(which, set.cluster().devices_per_host);
  config.neuroshard = search;
  return run_bench(set, planner_names(), config, /*quiet=*/true);
}

// Tasks where another algorithm's plan scores below the default planner's (or it has one and ours has
// none): the default planner is never worse than a baseline under the model it plans with
// (baseline_starts.hpp).
std::vector<std::string> per_task_losses(const BenchResult& result, const AlgorithmSummary& ours) {
  std::vector<std::string> losses;
  for (const auto& s : result.algorithms) {
    for (std::size_t t = 0; &s != &ours && t < s.tasks.size(); ++t) {
      const TaskOutcome& mine = ours.tasks[t];
      const TaskOutcome& theirs = s.tasks[t];
      if (theirs.valid && (!mine.valid || mine.cost_ms > theirs.cost_ms * (1 + 1e-9))) {
        losses.push_back(fmt::format("{} task {}: {} ms is above {}'s {:.4f} ms", kDefaultPlanner, t,
                                     mine.valid ? fmt::format("{:.4f}", mine.cost_ms) : "no plan", s.name,
                                     theirs.cost_ms));
      }
    }
  }
  return losses;
}

// Every way `result` falls short of the suite's rules; empty when it passes.
std::vector<std::string> regression_failures(const BenchResult& result, const nlohmann::json& recorded) {
  std::vector<std::string> failures;
  const AlgorithmSummary* ours = nullptr;
  for (const auto& s : result.algorithms) {
    if (s.name == kDefaultPlanner) ours = &s;
    for (std::size_t t = 0; t < s.tasks.size(); ++t) {
      if (s.tasks[t].error.rfind("invalid plan", 0) == 0) {
        failures.push_back(fmt::format("{} task {}: {}", s.name, t, s.tasks[t].error));
      }
    }
  }
  if (!ours) return {"no result for the default planner"};
  for (auto& loss : per_task_losses(result, *ours)) failures.push_back(std::move(loss));
  for (const auto& s : result.algorithms) {
    if (&s != ours && s.valid > 0 && !(ours->mean_cost_ms < s.mean_cost_ms)) {
      failures.push_back(fmt::format("{}: mean cost {:.4f} ms is not below {}'s {:.4f} ms", kDefaultPlanner,
                                     ours->mean_cost_ms, s.name, s.mean_cost_ms));
    }
  }
  const auto& mine = recorded.at("algorithms").at(kDefaultPlanner);
  double recorded_cost = mine.at("mean_cost_ms").get<double>();
  if (ours->mean_cost_ms > recorded_cost * (1 + kTolerance)) {
    failures.push_back(fmt::format("{}: mean cost {:.4f} ms is more than {:.1f}% above the recorded {:.4f} ms",
                                   kDefaultPlanner, ours->mean_cost_ms, 100 * kTolerance, recorded_cost));
  }
  if (ours->valid < mine.at("valid").get<int>()) {
    failures.push_back(
        fmt::format("{}: {} valid plans, recorded {}", kDefaultPlanner, ours->valid, mine.at("valid").get<int>()));
  }
  return failures;
}

nlohmann::json read_recorded() {
  if (!fs::exists(kRecorded)) return nlohmann::json::object();
  return read_json_file(kRecorded.string());
}

struct Case {
  BundledModel model;
  fs::path task_set;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const BundledModel& model : kModels) {
    for (const fs::path& set : task_sets()) out.push_back({model, set});
  }
  return out;
}

class Regression : public ::testing::TestWithParam<Case> {};

TEST_P(Regression, DefaultPlannerBeatsEveryBaselineAndItsRecord) {
  const Case& c = GetParam();
  const std::string name = c.task_set.stem().string();
  BenchResult result = bench(c.task_set, NeuroShardConfig{}, c.model);
  std::cout << c.model.name << ":\n" << format_bench(result) << std::flush;  // the CI log shows every figure
  if (g_record) {
    nlohmann::json recorded = read_recorded();
    nlohmann::json& mine = recorded["models"][c.model.name];
    mine["model_version"] = model_version(c.model.name);
    mine["hardware"] = c.model.hardware;
    nlohmann::json entry = bench_to_json(result, /*per_task=*/false);
    // Only what is checked: planning seconds vary from run to run and would make every re-record a diff.
    for (auto& [algorithm, figures] : entry["algorithms"].items()) {
      figures.erase("median_plan_seconds");
      figures.erase("max_plan_seconds");
    }
    mine["task_sets"][name] = entry;
    write_file_atomically(kRecorded.string(), recorded.dump(2) + "\n");
    GTEST_SKIP() << "recorded " << c.model.name << " " << name;
  }
  nlohmann::json recorded = read_recorded();
  ASSERT_TRUE(recorded.contains("models") && recorded["models"].contains(c.model.name) &&
              recorded["models"][c.model.name]["task_sets"].contains(name))
      << kRecorded << " has no results for " << c.model.name << " on " << name << "; record them with --record";
  const nlohmann::json& mine = recorded["models"][c.model.name];
  ASSERT_EQ(mine.value("model_version", ""), model_version(c.model.name))
      << "the recorded results belong to another " << c.model.name
      << " model; after reviewing the new model, re-record with ./build/tests/shardplan_regression_tests --record";
  for (const auto& failure : regression_failures(result, mine["task_sets"][name])) ADD_FAILURE() << failure;
}

INSTANTIATE_TEST_SUITE_P(TaskSets, Regression, ::testing::ValuesIn(cases()), [](const auto& param_info) {
  std::string n = std::string(param_info.param.model.name) + "_" + param_info.param.task_set.stem().string();
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

TEST(RegressionMutation, ASearchlessPlannerFailsTheSuite) {
  // The default planner with its search crippled: no useful splits, one grid point, no refinement, no
  // sharding-type pass (its shard moves alone are a refinement).
  NeuroShardConfig off;
  off.steps = 1;
  off.beam_width = 1;
  off.candidates = 1;
  off.grid_points = 1;
  off.patience = 1;
  off.refine_rounds = 0;
  off.type_moves = 0;
  const fs::path set = kSource / "data" / "tasks" / "paper-4gpu.json";
  const BundledModel& model = kModels[0];
  const nlohmann::json recorded = read_recorded();
  const nlohmann::json* sets = recorded.contains("models") && recorded["models"].contains(model.name)
                                   ? &recorded["models"][model.name]["task_sets"]
                                   : nullptr;
  if (g_record || sets == nullptr || !sets->contains("paper-4gpu")) GTEST_SKIP() << "no recorded paper-4gpu results";
  std::vector<std::string> failures = regression_failures(bench(set, off, model), (*sets)["paper-4gpu"]);
  EXPECT_FALSE(failures.empty()) << "the suite accepted a planner without its search";
}

}  // namespace
}  // namespace shardplan

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--record") shardplan::g_record = true;
  }
  spdlog::set_level(spdlog::level::warn);
  return RUN_ALL_TESTS();
}
