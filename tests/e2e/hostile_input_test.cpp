// Hostile inputs through the CLI, one case per class of issue 8: every input the tool reads (tables, plans,
// task sets, cost data, model directories, flags) that is malformed, truncated, too deep, of the wrong
// type, too large, non-finite, overflowing, empty or absurd ends with the documented exit code and a
// message naming the file and field, and leaves no output file behind. (Flag values and table fields
// are also covered case by case in bad_input_test.cpp; the fuzzers in tests/fuzz/ go further.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

namespace fs = std::filesystem;

struct HostileCase {
  std::string name;
  std::map<std::string, std::string> files;  // written into a fresh directory first
  std::vector<std::string> args;             // "{dir}" is replaced by that directory
  int exit_code;
  std::string message;                       // a fragment stderr must contain
  bool needs_torch = false;                  // reads LibTorch files
};

void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.name; }

const std::string kTables = source_path("tests/fixtures/tables_small.json");
const std::string kOkTables = R"([{"name": "a", "rows": 1000, "dim": 16}])";

std::string deep(int levels) { return std::string(static_cast<std::size_t>(levels), '[') + std::string(static_cast<std::size_t>(levels), ']'); }

// A plan for kTables' first table (t0, 2000000 x 32) on 4 GPUs, edited by `edit`. Built by hand: test
// parameters are made before main, too early to run the binary.
std::string plan_text(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = {{"format", "shard-plan/1"}, {"num_devices", 4}, {"memory_per_device_bytes", 1 << 30}};
  doc["tables"] = {{{"name", "t0"},
                    {"rows", 2000000},
                    {"dim", 32},
                    {"dtype", "fp32"},
                    {"sharding_type", "table_wise"},
                    {"ranks", {0}},
                    {"shards",
                     {{{"rank", 0}, {"shard_offsets", {0, 0}}, {"shard_sizes", {2000000, 32}}, {"placement", "rank:0/cuda:0"}}}}}};
  doc["devices"] = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) doc["devices"].push_back({{"rank", r}, {"memory_bytes", r == 0 ? 2000000 * 32 * 4 : 0}});
  edit(doc);
  return doc.dump();
}

std::string task_set_text(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = {{"name", "tiny"},
                        {"num_devices", 2},
                        {"memory_per_device_bytes", 1 << 30},
                        {"tasks", {{{"tables", {{{"name", "a"}, {"rows", 100}, {"dim", 8}}}}}}}};
  edit(doc);
  return doc.dump();
}

std::vector<std::string> plan_args(const std::string& extra_flag = "") {
  std::vector<std::string> args = {"--tables", "{dir}/tables.json", "--gpus", "4", "--mem-per-gpu", "1GiB", "-o",
                                   "{dir}/out.json"};
  if (!extra_flag.empty()) args.push_back(extra_flag);
  return args;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Builds without LibTorch have no eval-cost-model and read no model files.
bool built_with_torch() {
  // Without LibTorch the name is not a subcommand and the planner's own help is printed instead.
  static const bool with_torch =
      run_cli({"eval-cost-model", "--help"}).out.find("shard-plan eval-cost-model") != std::string::npos;
  return with_torch;
}

class HostileInput : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileInput, ExitsWithCodeAndMessageAndWritesNothing) {
  const HostileCase& c = GetParam();
  TempDir dir;
  std::vector<std::string> before;
  for (const auto& [name, content] : c.files) {
    fs::create_directories(fs::path(dir.path(name)).parent_path());
    dir.write(name, content);
  }
  before = dir.files();
  std::vector<std::string> args;
  for (std::string arg : c.args) {
    for (auto pos = arg.find("{dir}"); pos != std::string::npos; pos = arg.find("{dir}")) {
      arg.replace(pos, 5, dir.root().string());
    }
    args.push_back(arg);
  }
  if (c.needs_torch && !built_with_torch()) GTEST_SKIP() << "no LibTorch in this build";
  CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(dir.files(), before);  // no plan, no report, no temporary
}

const std::string kCorruptWeights = "PK\x03\x04 this is not the zip LibTorch wrote";

INSTANTIATE_TEST_SUITE_P(
    Classes, HostileInput,
    ::testing::Values(
        // --- tables files ---
        HostileCase{"tables_truncated", {{"tables.json", R"([{"name": "a", "rows": 10)"}}, plan_args(), 2,
                    "tables.json: invalid JSON"},
        HostileCase{"tables_nested_a_million_deep", {{"tables.json", deep(1'000'000)}}, plan_args(), 2,
                    "invalid JSON: nested more than 64 levels deep"},
        HostileCase{"tables_number_beyond_double", {{"tables.json", R"([{"rows": 1e999, "dim": 8}])"}}, plan_args(), 2,
                    "invalid JSON: number overflow parsing '1e999'"},
        HostileCase{"tables_pooling_not_finite_or_huge",
                    {{"tables.json", R"([{"rows": 10, "dim": 8, "pooling_factor": 1e300}])"}}, plan_args(), 2,
                    "tables[0].pooling_factor"},
        HostileCase{"tables_binary_garbage", {{"tables.json", std::string("\x00\xff\xfe\x01", 4)}}, plan_args(), 2,
                    "tables.json: invalid JSON"},
        HostileCase{"tables_whitespace_only", {{"tables.json", " \n\t "}}, plan_args(), 2, "file is empty"},
        HostileCase{"tables_total_bytes_overflow_int64",
                    {{"tables.json", [] {
                        std::string text = "[";
                        for (int i = 0; i < 64; ++i) {
                          text += (i ? "," : "") + std::string(R"({"rows": 1000000000000, "dim": 65536})");
                        }
                        return text + "]";
                      }()}},
                    with(plan_args(), {"--optimizer", "adam"}), 3, "TiB in total but 4 devices offer"},
        HostileCase{"tables_is_a_directory", {{"tables.json/x", "{}"}}, plan_args(), 2, "tables.json: is a directory"},
        // --- command-line values ---
        HostileCase{"gpus_zero", {{"tables.json", kOkTables}}, with(plan_args(), {"--gpus", "0"}), 2,
                    "--gpus: must be between 1 and 65536, got 0"},
        HostileCase{"gpus_million", {{"tables.json", kOkTables}}, with(plan_args(), {"--gpus", "1000000"}), 2,
                    "--gpus: must be between 1 and 65536, got 1000000"},
        HostileCase{"memory_overflowing_int64", {{"tables.json", kOkTables}},
                    with(plan_args(), {"--mem-per-gpu", "99999999TiB"}), 2, "--mem-per-gpu"},
        HostileCase{"search_steps_absurd", {{"tables.json", kOkTables}}, with(plan_args(), {"--steps", "1000000000"}),
                    2, "--steps: must be in [0, 1000000]"},
        HostileCase{"time_limit_negative", {{"tables.json", kOkTables}}, with(plan_args(), {"--time-limit", "-1"}), 2,
                    "--time-limit: must be a number of seconds >= 0 (0: no limit), got -1"},
        HostileCase{"grid_bound_nan", {{"tables.json", kOkTables}}, with(plan_args(), {"--grid-min", "nan"}), 2,
                    "--grid-min: must be a positive number, got nan"},
        HostileCase{"report_not_svg", {{"tables.json", kOkTables}}, with(plan_args(), {"--report", "{dir}/c.png"}), 2,
                    "--report"},
        // --- plan files (evaluate reads any tool's plan) ---
        HostileCase{"plan_truncated", {{"plan.json", R"({"format": "shard-plan/1", "num_devices": 4, "tab)"}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2, "plan.json: invalid JSON"},
        HostileCase{"plan_wrong_type",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["num_devices"] = "4"; })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2,
                    "num_devices: must be an integer in [1, 65536], got \"4\""},
        HostileCase{"plan_absurd_cluster",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["num_devices"] = 1'000'000'000; })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2,
                    "num_devices: must be an integer in [1, 65536], got 1000000000"},
        HostileCase{"plan_shard_sizes_overflow",
                    {{"plan.json", plan_text([](nlohmann::json& d) {
                        d["tables"][0]["shards"][0]["shard_sizes"] = {1'000'000'000'000'000'000ll, 65536};
                      })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2,
                    "tables[0].shards[0].shard_sizes[0]: must be an integer in [0, 1000000000000]"},
        HostileCase{"plan_duplicate_table",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["tables"].push_back(d["tables"][0]); })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2, "appears more than once"},
        HostileCase{"plan_nested_deep", {{"plan.json", "{\"tables\": " + deep(10'000) + "}"}},
                    {"validate", "--plan", "{dir}/plan.json", "--tables", kTables}, 2, "nested more than 64 levels"},
        // --- task sets ---
        HostileCase{"tasks_zero_devices", {{"t.json", task_set_text([](nlohmann::json& d) { d["num_devices"] = 0; })}},
                    {"bench", "--tasks", "{dir}/t.json"}, 2, "num_devices: must be an integer in [1, 65536], got 0"},
        HostileCase{"tasks_absurd_devices",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["num_devices"] = 1e12; })}},
                    {"bench", "--tasks", "{dir}/t.json"}, 2, "num_devices: must be an integer in [1, 65536]"},
        HostileCase{"tasks_none", {{"t.json", task_set_text([](nlohmann::json& d) { d["tasks"] = nlohmann::json::array(); })}},
                    {"bench", "--tasks", "{dir}/t.json"}, 2, "tasks: must hold at least one task"},
        HostileCase{"tasks_table_bad_dim",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["tasks"][0]["tables"][0]["dim"] = 13; })}},
                    {"bench", "--tasks", "{dir}/t.json"}, 2, "tasks[0].tables[0].dim: must be a positive multiple of 4, got 13"},
        // --- model directories ---
        HostileCase{"model_missing", {{"tables.json", kOkTables}}, with(plan_args(), {"--model", "{dir}/nope"}), 2,
                    "nope: not a model directory", true},
        HostileCase{"model_meta_truncated", {{"tables.json", kOkTables}, {"m/meta.json", R"({"format": "shard-pl)"}},
                    with(plan_args(), {"--model", "{dir}/m"}), 2, "m/meta.json: invalid JSON", true},
        HostileCase{"model_weights_corrupt",
                    {{"tables.json", kOkTables}, {"m/meta.json", read_file(source_path("models/default/meta.json"))},
                     {"m/compute.pt", kCorruptWeights}, {"m/comm.pt", kCorruptWeights}},
                    with(plan_args(), {"--model", "{dir}/m"}), 2, "m/compute.pt: zip archive without its central directory", true},
        // --- cost data ---
        HostileCase{"cost_data_torn_line",
                    {{"c/compute/meta.json", read_file(source_path("data/costs/cpu-2core/compute/meta.json"))},
                     {"c/compute/samples.jsonl", "{\"shards\": [[[[\n"}},
                    {"eval-cost-model", "--model", source_path("models/default"), "--data", "{dir}/c"}, 2,
                    "samples.jsonl:1: invalid JSON", true}),
    [](const ::testing::TestParamInfo<HostileCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace shardplan::e2e
