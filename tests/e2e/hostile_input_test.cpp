// Hostile inputs through the CLI, one case per class of issue 8: every input the tool reads (tables, plans,
// task sets, cost data, model directories, flags) that is malformed, truncated, too deep, of the wrong
// type, too large, non-finite, overflowing, empty or absurd ends with the documented exit code and a
// message naming the file and field, and leaves no output file behind. (Flag values and table fields
// are also covered case by case in bad_input_test.cpp; the fuzzers in tests/fuzz/ go further.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "shardplan/core/sha256.hpp"

namespace shardplan::e2e {
namespace {

namespace fs = std::filesystem;

struct HostileCase {
  std::string name;
  std::map<std::string, std::string> files;  // written into a fresh directory first
  std::vector<std::string> args;             // "{dir}" is replaced by that directory
  int exit_code;
  std::string message;                            // a fragment stderr must contain
  bool needs_torch = false;                       // reads LibTorch files
  std::map<std::string, std::string> links = {};  // symlinks made beside the files: name -> target
};

void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.name; }

const std::string kTables = source_path("tests/fixtures/tables_small.json");
const std::string kOkTables = R"([{"name": "a", "rows": 1000, "dim": 16}])";

std::string deep(int levels) {
  return std::string(static_cast<std::size_t>(levels), '[') + std::string(static_cast<std::size_t>(levels), ']');
}

// A plan for kTables' first table (t0, 2000000 x 32) on 4 GPUs, edited by `edit`. Built by hand: test
// parameters are made before main, too early to run the binary.
std::string plan_text(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = {{"format", "shard-plan/1"}, {"num_devices", 4}, {"memory_per_device_bytes", 1 << 30}};
  doc["tables"] = {
      {{"name", "t0"},
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
  std::vector<std::string> args = {"--tables", "{dir}/tables.json", "--gpus", "4", "--mem-per-gpu", "1GiB",
                                   "-o",       "{dir}/out.json"};
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

// `text` with "{dir}" replaced by the test's directory.
std::string in_dir(std::string text, const TempDir& dir) {
  for (auto pos = text.find("{dir}"); pos != std::string::npos; pos = text.find("{dir}")) {
    text.replace(pos, 5, dir.root().string());
  }
  return text;
}

// Every file's content by name (symlinks followed), to prove a run changed nothing.
std::map<std::string, std::string> contents(const TempDir& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir.root())) {
    const std::string name = fs::relative(entry.path(), dir.root()).string();
    out[name] = entry.is_regular_file() ? read_file(entry.path()) : std::string("(not a file)");
  }
  return out;
}

// models/cpu-2core with its compute.pt changed as `edit` says (and meta.json as `edit_meta` does).
std::map<std::string, std::string> damaged_model(const std::function<void(std::string&)>& edit,
                                                 const std::function<void(nlohmann::json&)>& edit_meta = {}) {
  std::string compute = read_file(source_path("models/cpu-2core/compute.pt"));
  edit(compute);
  nlohmann::json meta = nlohmann::json::parse(read_file(source_path("models/cpu-2core/meta.json")));
  if (edit_meta) edit_meta(meta);
  return {{"tables.json", R"([{"name": "a", "rows": 1000, "dim": 16}])"},
          {"m/meta.json", meta.dump(2)},
          {"m/compute.pt", compute},
          {"m/comm.pt", read_file(source_path("models/cpu-2core/comm.pt"))}};
}

// 64 bytes flipped in the middle, as the hostile pass did: the zip's structure intact, an entry's CRC not.
void flip_middle(std::string& bytes) {
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = static_cast<char>(~bytes[i]);
}

class HostileInput : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileInput, ExitsWithCodeAndMessageAndWritesNothing) {
  const HostileCase& c = GetParam();
  TempDir dir;
  for (const auto& [name, content] : c.files) {
    fs::create_directories(fs::path(dir.path(name)).parent_path());
    dir.write(name, content);
  }
  for (const auto& [name, target] : c.links) fs::create_symlink(target, dir.path(name));
  const std::map<std::string, std::string> before = contents(dir);
  std::vector<std::string> args;
  for (const std::string& arg : c.args) args.push_back(in_dir(arg, dir));
  if (c.needs_torch && !built_with_torch()) GTEST_SKIP() << "no LibTorch in this build";
  CliResult r = run_cli(args);
  const std::string message = in_dir(c.message, dir);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(contents(dir), before);  // no plan, no report, no temporary, and no file changed
}

const std::string kCorruptWeights = "PK\x03\x04 this is not the zip LibTorch wrote";

INSTANTIATE_TEST_SUITE_P(
    Classes, HostileInput,
    ::testing::Values(
        // --- tables files ---
        HostileCase{"tables_truncated",
                    {{"tables.json", R"([{"name": "a", "rows": 10)"}},
                    plan_args(),
                    2,
                    "tables.json: invalid JSON"},
        HostileCase{"tables_nested_a_million_deep",
                    {{"tables.json", deep(1'000'000)}},
                    plan_args(),
                    2,
                    "invalid JSON: nested more than 64 levels deep"},
        HostileCase{"tables_number_beyond_double",
                    {{"tables.json", R"([{"rows": 1e999, "dim": 8}])"}},
                    plan_args(),
                    2,
                    "invalid JSON: number overflow parsing '1e999'"},
        HostileCase{"tables_pooling_not_finite_or_huge",
                    {{"tables.json", R"([{"rows": 10, "dim": 8, "pooling_factor": 1e300}])"}},
                    plan_args(),
                    2,
                    "tables[0].pooling_factor"},
        HostileCase{"tables_binary_garbage",
                    {{"tables.json", std::string("\x00\xff\xfe\x01", 4)}},
                    plan_args(),
                    2,
                    "tables.json: invalid JSON"},
        HostileCase{"tables_whitespace_only", {{"tables.json", " \n\t "}}, plan_args(), 2, "file is empty"},
        HostileCase{"tables_total_bytes_overflow_int64",
                    {{"tables.json",
                      [] {
                        std::string text = "[";
                        for (int i = 0; i < 64; ++i) {
                          text += (i ? "," : "") + std::string(R"({"rows": 1000000000000, "dim": 65536})");
                        }
                        return text + "]";
                      }()}},
                    with(plan_args(), {"--optimizer", "adam"}),
                    3,
                    "TiB in total but 4 devices offer"},
        HostileCase{"tables_is_a_directory", {{"tables.json/x", "{}"}}, plan_args(), 2, "tables.json: is a directory"},
        // --- command-line values ---
        HostileCase{"gpus_zero",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--gpus", "0"}),
                    2,
                    "--gpus: must be between 1 and 65536, got 0"},
        HostileCase{"gpus_million",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--gpus", "1000000"}),
                    2,
                    "--gpus: must be between 1 and 65536, got 1000000"},
        HostileCase{"memory_overflowing_int64",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--mem-per-gpu", "99999999TiB"}),
                    2,
                    "--mem-per-gpu"},
        HostileCase{"search_steps_absurd",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--steps", "1000000000"}),
                    2,
                    "--steps: must be in [0, 1000000]"},
        HostileCase{"time_limit_negative",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--time-limit", "-1"}),
                    2,
                    "--time-limit: must be a number of seconds >= 0 (0: no limit), got -1"},
        HostileCase{"grid_bound_nan",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--grid-min", "nan"}),
                    2,
                    "--grid-min: must be a positive number, got nan"},
        HostileCase{"report_not_svg",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--report", "{dir}/c.png"}),
                    2,
                    "--report"},
        // --- plan files (evaluate reads any tool's plan) ---
        HostileCase{"plan_truncated",
                    {{"plan.json", R"({"format": "shard-plan/1", "num_devices": 4, "tab)"}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "plan.json: invalid JSON"},
        HostileCase{"plan_wrong_type",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["num_devices"] = "4"; })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "num_devices: must be an integer in [1, 65536], got \"4\""},
        HostileCase{"plan_absurd_cluster",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["num_devices"] = 1'000'000'000; })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "num_devices: must be an integer in [1, 65536], got 1000000000"},
        HostileCase{"plan_shard_sizes_overflow",
                    {{"plan.json", plan_text([](nlohmann::json& d) {
                        d["tables"][0]["shards"][0]["shard_sizes"] = {1'000'000'000'000'000'000ll, 65536};
                      })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "tables[0].shards[0].shard_sizes[0]: must be an integer in [0, 1000000000000]"},
        HostileCase{"plan_duplicate_table",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d["tables"].push_back(d["tables"][0]); })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "appears more than once"},
        HostileCase{"plan_nested_deep",
                    {{"plan.json", "{\"tables\": " + deep(10'000) + "}"}},
                    {"validate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "nested more than 64 levels"},
        // --- task sets ---
        HostileCase{"tasks_zero_devices",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["num_devices"] = 0; })}},
                    {"bench", "--tasks", "{dir}/t.json"},
                    2,
                    "num_devices: must be an integer in [1, 65536], got 0"},
        HostileCase{"tasks_absurd_devices",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["num_devices"] = 1e12; })}},
                    {"bench", "--tasks", "{dir}/t.json"},
                    2,
                    "num_devices: must be an integer in [1, 65536]"},
        HostileCase{"tasks_none",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["tasks"] = nlohmann::json::array(); })}},
                    {"bench", "--tasks", "{dir}/t.json"},
                    2,
                    "tasks: must hold at least one task"},
        HostileCase{"tasks_table_bad_dim",
                    {{"t.json", task_set_text([](nlohmann::json& d) { d["tasks"][0]["tables"][0]["dim"] = 13; })}},
                    {"bench", "--tasks", "{dir}/t.json"},
                    2,
                    "tasks[0].tables[0].dim: must be a positive multiple of 4, got 13"},
        // --- model directories ---
        HostileCase{"model_missing",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"--model", "{dir}/nope"}),
                    2,
                    "nope: not a model directory",
                    true},
        HostileCase{"model_meta_truncated",
                    {{"tables.json", kOkTables}, {"m/meta.json", R"({"format": "shard-pl)"}},
                    with(plan_args(), {"--model", "{dir}/m"}),
                    2,
                    "m/meta.json: invalid JSON",
                    true},
        HostileCase{"model_weights_corrupt",
                    {{"tables.json", kOkTables},
                     {"m/meta.json", read_file(source_path("models/cpu-2core/meta.json"))},
                     {"m/compute.pt", kCorruptWeights},
                     {"m/comm.pt", kCorruptWeights}},
                    with(plan_args(), {"--model", "{dir}/m"}),
                    2,
                    "m/compute.pt: zip archive without its central directory",
                    true},
        HostileCase{"model_weights_crc_mismatch", damaged_model(flip_middle), with(plan_args(), {"--model", "{dir}/m"}),
                    2, "m/compute.pt: zip entry", true},
        HostileCase{"model_weights_hash_mismatch",
                    damaged_model([](std::string&) {},
                                  [](nlohmann::json& meta) {
                                    meta["files"]["comm.pt"]["sha256"] =
                                        sha256_hex(read_file(source_path("models/cpu-2core/comm.pt")));
                                    meta["files"]["compute.pt"]["sha256"] = std::string(64, '0');
                                  }),
                    with(plan_args(), {"--model", "{dir}/m"}), 2, "m/compute.pt: its SHA-256 is", true},
        HostileCase{"table_the_model_cannot_score",
                    {{"tables.json", R"([{"name": "x", "rows": 1000, "dim": 65536}])"}},
                    with(plan_args(), {"--model", "cpu-2core"}),
                    2,
                    "table \"x\" (1000 x 65536): the cost model neural:cpu-2core gives no finite cost",
                    true},
        HostileCase{"evaluate_a_table_the_model_cannot_score",
                    {{"tables.json", R"([{"name": "t0", "rows": 2000000, "dim": 65536}])"},
                     {"plan.json", plan_text([](nlohmann::json& d) {
                        d["tables"][0]["dim"] = 65536;
                        d["tables"][0]["shards"][0]["shard_sizes"] = {2000000, 65536};
                        d["memory_per_device_bytes"] = int64_t{1} << 40;
                        d["devices"][0]["memory_bytes"] = int64_t{2000000} * 65536 * 4;
                      })}},
                    {"evaluate", "--plan", "{dir}/plan.json", "--tables", "{dir}/tables.json", "--model", "cpu-2core"},
                    2,
                    "table \"t0\" (2000000 x 65536): the cost model neural:cpu-2core gives no finite cost",
                    true},
        // --- plans that are not plans ---
        HostileCase{"plan_without_format",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d.erase("format"); })}},
                    {"validate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "format: missing required field"},
        HostileCase{"plan_without_devices",
                    {{"plan.json", plan_text([](nlohmann::json& d) { d.erase("devices"); })}},
                    {"validate", "--plan", "{dir}/plan.json", "--tables", kTables},
                    2,
                    "devices: missing required field"},
        // --- outputs that would destroy a file (issue 43) ---
        HostileCase{"output_is_the_tables_file",
                    {{"tables.json", kOkTables}},
                    {"--tables", "{dir}/tables.json", "--gpus", "4", "-o", "{dir}/tables.json"},
                    2,
                    "/tables.json: the same file as --tables"},
        HostileCase{"output_is_the_tables_file_through_a_symlink",
                    {{"tables.json", kOkTables}},
                    {"--tables", "{dir}/tables.json", "--gpus", "4", "-o", "{dir}/link.json"},
                    2,
                    "/link.json: the same file as --tables",
                    false,
                    {{"link.json", "tables.json"}}},
        HostileCase{
            "chart_is_the_tables_file",
            {{"tables.svg", kOkTables}},
            {"--tables", "{dir}/tables.svg", "--gpus", "4", "-o", "{dir}/p.json", "--report", "{dir}/tables.svg"},
            2,
            "--report {dir}/tables.svg: the same file as --tables"},
        HostileCase{"chart_is_the_plan",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"-o", "{dir}/p.svg", "--report", "{dir}/p.svg"}),
                    2,
                    "--report {dir}/p.svg: the same file as -o {dir}/p.svg"},
        HostileCase{"output_is_a_model_file", damaged_model([](std::string&) {}),
                    with(plan_args(), {"--model", "{dir}/m", "-o", "{dir}/m/meta.json"}), 2,
                    "-o {dir}/m/meta.json: the same file as --model {dir}/m/meta.json"},
        HostileCase{"failed_run_keeps_the_existing_plan",
                    {{"tables.json", kOkTables}, {"out.json", "the old plan"}},
                    with(plan_args(), {"--algo", "random", "--report", "{dir}/nodir/r.svg"}),
                    1,
                    "--report {dir}/nodir/r.svg: directory {dir}/nodir does not exist"},
        HostileCase{"output_path_empty",
                    {{"tables.json", kOkTables}},
                    with(plan_args(), {"-o", ""}),
                    2,
                    "-o: the output path is empty"},
        HostileCase{"output_under_a_file",
                    {{"tables.json", kOkTables}, {"afile", "x"}},
                    with(plan_args(), {"-o", "{dir}/afile/p.json"}),
                    1,
                    "-o {dir}/afile/p.json: {dir}/afile is not a directory"},
        HostileCase{"gen_tasks_over_its_pool",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "-o", "{dir}/pool.json"},
                    2,
                    "the same file as --pool"},
        // The generators' settings are named by the library; the flags by the CLI.
        HostileCase{"gen_tasks_no_tasks",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--num-tasks", "0", "-o",
                     "{dir}/tasks.json"},
                    2,
                    "--num-tasks: must be at least 1, got 0"},
        HostileCase{"gen_tasks_fewest_over_most",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--min-tables", "70", "-o",
                     "{dir}/tasks.json"},
                    2,
                    "--min-tables: must be in [1, 60] (the most tables per task), got 70"},
        HostileCase{"gen_tasks_more_than_the_pool",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "-o", "{dir}/tasks.json"},
                    2,
                    "--max-tables: must not exceed the pool's 1 tables, got 60"},
        HostileCase{"gen_tasks_no_gpus",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--min-tables", "1",
                     "--max-tables", "1", "--gpus", "0", "-o", "{dir}/tasks.json"},
                    2,
                    "--gpus: must be between 1 and 65536, got 0"},
        HostileCase{"gen_tasks_width_not_a_multiple_of_4",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--min-tables", "1",
                     "--max-tables", "1", "--max-width", "6", "-o", "{dir}/tasks.json"},
                    2,
                    "--max-width: must be a positive multiple of 4 up to"},
        HostileCase{"gen_tasks_no_draw_fits",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--min-tables", "1",
                     "--max-tables", "1", "--mem-per-gpu", "1KiB", "-o", "{dir}/tasks.json"},
                    3,
                    "--min-tables: no draw of 1 pool tables can fit 4 GPUs x"},
        // --drift instead of --protocol (issue 61): one mode's options are refused in the other, and the
        // drifted set is an input like the pool.
        HostileCase{"gen_tasks_drift_with_a_protocol",
                    {{"pool.json", kOkTables}, {"tasks.json", task_set_text([](nlohmann::json&) {})}},
                    {"gen-tasks", "--drift", "{dir}/tasks.json", "--pool", "{dir}/pool.json", "--protocol",
                     "paper-4gpu", "-o", "{dir}/drift.json"},
                    2,
                    "--protocol: not with --drift"},
        HostileCase{"gen_tasks_drift_with_a_protocol_option",
                    {{"pool.json", kOkTables}, {"tasks.json", task_set_text([](nlohmann::json&) {})}},
                    {"gen-tasks", "--drift", "{dir}/tasks.json", "--pool", "{dir}/pool.json", "--num-tasks", "3", "-o",
                     "{dir}/drift.json"},
                    2,
                    "--num-tasks: not with --drift"},
        HostileCase{"gen_tasks_drift_over_its_input",
                    {{"pool.json", kOkTables}, {"tasks.json", task_set_text([](nlohmann::json&) {})}},
                    {"gen-tasks", "--drift", "{dir}/tasks.json", "--pool", "{dir}/pool.json", "-o", "{dir}/tasks.json"},
                    2,
                    "the same file as --drift"},
        HostileCase{"gen_tasks_drift_fraction_out_of_range",
                    {{"pool.json", kOkTables}, {"tasks.json", task_set_text([](nlohmann::json&) {})}},
                    {"gen-tasks", "--drift", "{dir}/tasks.json", "--pool", "{dir}/pool.json", "--drift-retire", "1",
                     "-o", "{dir}/drift.json"},
                    2,
                    "--drift-retire: must be in [0, 1), got 1"},
        HostileCase{"gen_tasks_drift_option_without_drift",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "--protocol", "paper-4gpu", "--drift-grow", "0.2", "-o",
                     "{dir}/tasks.json"},
                    2,
                    "--drift-grow: only with --drift"},
        HostileCase{"gen_tasks_neither_protocol_nor_drift",
                    {{"pool.json", kOkTables}},
                    {"gen-tasks", "--pool", "{dir}/pool.json", "-o", "{dir}/tasks.json"},
                    2,
                    "--protocol is required (or --drift"},
        HostileCase{"gen_pool_no_tables",
                    {},
                    {"gen-pool", "--num-tables", "0", "-o", "{dir}/pool.json"},
                    2,
                    "--num-tables: must be in [1, 1000000], got 0"},
        HostileCase{"gen_pool_absurdly_many_tables",
                    {},
                    {"gen-pool", "--num-tables", "100000000", "-o", "{dir}/pool.json"},
                    2,
                    "--num-tables: must be in [1, 1000000], got 100000000"},
        // An unsigned seed read from "-1" would be 2^64 - 1, silently.
        HostileCase{"gen_traces_negative_seed",
                    {{"tables.json", kOkTables}},
                    {"gen-traces", "--tables", "{dir}/tables.json", "--seed", "-1", "-o", "{dir}/t.bin"},
                    2,
                    "--seed: must be a non-negative integer, got -1"},
        HostileCase{"gen_pool_negative_seed",
                    {},
                    {"gen-pool", "--seed", "-3", "-o", "{dir}/pool.json"},
                    2,
                    "--seed: must be a non-negative integer, got -3"},
        HostileCase{"gen_pool_pooling_factor_one",
                    {},
                    {"gen-pool", "--mean-pooling-factor", "1", "-o", "{dir}/pool.json"},
                    2,
                    "--mean-pooling-factor: must exceed 1, got 1"},
        // --- cost data ---
        // Cost data without a sample is no evidence of a good model.
        HostileCase{"cost_data_without_samples",
                    {{"c/compute/meta.json", read_file(source_path("data/costs/cpu-2core/compute/meta.json"))},
                     {"c/compute/samples.jsonl", ""}},
                    {"eval-cost-model", "--model", source_path("models/cpu-2core"), "--data", "{dir}/c"},
                    2,
                    "holds no samples",
                    true},
        HostileCase{"cost_data_torn_line",
                    {{"c/compute/meta.json", read_file(source_path("data/costs/cpu-2core/compute/meta.json"))},
                     {"c/compute/samples.jsonl", "{\"shards\": [[[[\n"}},
                    {"eval-cost-model", "--model", source_path("models/cpu-2core"), "--data", "{dir}/c"},
                    2,
                    "samples.jsonl:1: invalid JSON",
                    true}),
    [](const ::testing::TestParamInfo<HostileCase>& param_info) { return param_info.param.name; });

// --- outputs that are not regular files, and runs that end mid-write (issue 43) ---

bool is_character_device(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// A copy of /dev/null or /dev/full: as root, -o onto it must leave a device, not a JSON file.
TEST(HostileOutputs, ACharacterDeviceIsWrittenIntoNotReplaced) {
  TempDir dir;
  const std::string null = dir.path("null");
  const std::string full = dir.path("full");
  if (::geteuid() != 0 || ::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    GTEST_SKIP() << "mknod needs root";
  }
  CliResult r = run_cli({"--tables", kTables, "--gpus", "4", "-o", null, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"--tables", kTables, "--gpus", "4", "-o", full, "--report", dir.path("chart.svg"), "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("full: write failed: No space left on device"), std::string::npos) << r.err;
  EXPECT_TRUE(is_character_device(null));
  EXPECT_TRUE(is_character_device(full));
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"full", "null"})) << "no chart: the plan failed; no temporary";
}

TEST(HostileOutputs, DevStdoutGetsThePlanAndTheReportGoesToStderr) {
  CliResult r = run_cli({"--tables", kTables, "--gpus", "4", "-o", "/dev/stdout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "shard-plan/1");
  EXPECT_NE(r.err.find("plan: neuroshard on 4 GPUs"), std::string::npos) << r.err;
}

TEST(HostileOutputs, ASymlinkKeepsPointingAtTheNewPlan) {
  TempDir dir;
  fs::create_directories(dir.path("plans"));
  const std::string target = dir.write("plans/plan.json", "old");
  fs::create_symlink("plans/plan.json", dir.path("latest.json"));
  CliResult r = run_cli({"--tables", kTables, "--gpus", "4", "-o", dir.path("latest.json"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir.path("latest.json")));
  EXPECT_EQ(nlohmann::json::parse(read_file(target))["format"], "shard-plan/1");
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"latest.json", "plans"}));
}

// The chart is a FIFO nobody reads: the run waits to open it with the plan staged beside its target,
// which is when the signal comes. Nothing may be left: no plan, no temporary.
TEST(HostileOutputs, ASignalDuringTheFinalWriteLeavesNoTemporary) {
  TempDir dir;
  TempDir capture;
  const std::string fifo = dir.path("chart.svg");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int pid =
      start_cli({"--tables", kTables, "--gpus", "4", "-o", dir.path("plan.json"), "--report", fifo}, capture);
  bool staged = false;
  for (int waited = 0; waited < 6000 && !staged; ++waited) {  // up to a minute
    for (const std::string& name : dir.files()) staged = staged || name.rfind(".plan.json.tmp.", 0) == 0;
    if (!staged) ::usleep(10'000);
  }
  ::kill(pid, SIGTERM);
  CliResult r = finish_cli(pid, capture);
  ASSERT_TRUE(staged) << "the plan was never staged: " << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(dir.files(), std::vector<std::string>{"chart.svg"});
}

// Thousands of tiny tables on 8 GPUs: a refinement round lists millions of moves and swaps, and used
// to run for minutes past --time-limit. Bounds are generous: the point is that it stops at all.
TEST(HostileOutputs, TimeLimitStopsTheRefinementMidRound) {
  TempDir dir;
  nlohmann::json tables = nlohmann::json::array();
  for (int t = 0; t < 4000; ++t)
    tables.push_back(
        {{"name", "t" + std::to_string(t)}, {"rows", 1 + t % 50}, {"dim", 4}, {"pooling_factor", 1 + t % 9}});
  const std::string path = dir.write("tables.json", tables.dump());
  const auto start = std::chrono::steady_clock::now();
  CliResult r = run_cli(
      {"--tables", path, "--gpus", "8", "--no-compare", "--time-limit", "1", "-o", dir.path("plan.json"), "--quiet"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(seconds, 30.0);
  EXPECT_TRUE(nlohmann::json::parse(read_file(dir.path("plan.json")))["search"]["cut_short"].get<bool>());
}

}  // namespace
}  // namespace shardplan::e2e
