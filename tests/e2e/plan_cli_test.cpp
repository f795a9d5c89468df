#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "cli_runner.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan::e2e {
namespace {

const std::string kSmall = source_path("tests/fixtures/tables_small.json");
const std::string kExample = source_path("data/examples/tables.json");

void expect_valid(const std::string& plan, const std::string& tables) {
  CliResult check = run_cli({"validate", "--plan", plan, "--tables", tables});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find(": valid"), std::string::npos) << check.out;
}

TEST(PlanCli, EveryAlgorithmWritesAPlanThatValidates) {
  TempDir dir;
  for (const auto& algo : planner_names()) {
    std::string out = dir.path(algo + ".json");
    CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "--mem-per-gpu", "16GiB", "--algo", algo, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << algo << ": " << r.err;
    EXPECT_NE(r.out.find("plan: " + algo + " on 4 GPUs"), std::string::npos) << r.out;
    expect_valid(out, kSmall);
  }
}

TEST(PlanCli, PlansTheBundledExampleOn128Gpus) {
  TempDir dir;
  std::string out = dir.path("plan.json");
  CliResult r = run_cli({"--tables", kExample, "--gpus", "128", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("devices not shown; --full-report lists all"), std::string::npos) << r.out;
  auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["num_devices"], 128);
  EXPECT_EQ(plan["devices"].size(), 128u);
  expect_valid(out, kExample);
}

// A 4-column table larger than any GPU: the search alone refuses it (bad_input_test), and TorchRec's
// all-types proposals plan it in row blocks, so the planner does, saying where it started.
TEST(PlanCli, PlansATableOnlyRowBlocksHold) {
  TempDir dir;
  const std::string tables = dir.write("tables.json", R"([{"name": "narrow", "rows": 100000000, "dim": 4},
                                                         {"name": "small", "rows": 1000, "dim": 16}])");
  const std::string out = dir.path("plan.json");
  // The search starts the table as row-wise blocks itself, with or without the baselines' starts.
  for (bool starts : {true, false}) {
    std::vector<std::string> args = {"--tables", tables,    "--gpus",   "4",  "--mem-per-gpu",
                                     "1GiB",     "--model", "analytic", "-o", out};
    if (!starts) args.push_back("--no-baseline-starts");
    CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("search: \"narrow\" start as row-wise blocks"), std::string::npos) << r.err;
    auto plan = nlohmann::json::parse(read_file(out));
    EXPECT_EQ(plan["tables"][0]["sharding_type"], "row_wise");
    if (starts) {
      EXPECT_EQ(plan["search"]["started_from"], "search");
    }
    expect_valid(out, tables);
  }
}

// The tables file's sharding_types and ranks: a pinned table on its rank, a column-wise-only table in one
// slice, a table only table-row-wise blocks may take; and what cannot hold, by name and exit code.
TEST(PlanCli, HonoursPerTableConstraints) {
  TempDir dir;
  const std::string tables = dir.write("tables.json", R"([
    {"name": "pinned", "rows": 200000, "dim": 64, "pooling_factor": 20, "ranks": [5]},
    {"name": "columns", "rows": 1000, "dim": 16, "sharding_types": ["column_wise"]},
    {"name": "host_rows", "rows": 5000000, "dim": 32, "pooling_factor": 5, "sharding_types": ["table_row_wise"]},
    {"name": "free", "rows": 300000, "dim": 128, "pooling_factor": 30}])");
  const std::string out = dir.path("plan.json");
  CliResult r = run_cli({"--tables", tables, "--gpus", "8", "--gpus-per-host", "4", "--model", "analytic", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["tables"][0]["ranks"], nlohmann::json({5}));
  EXPECT_EQ(plan["tables"][1]["sharding_type"], "column_wise");
  EXPECT_EQ(plan["tables"][2]["sharding_type"], "table_row_wise");
  expect_valid(out, tables);
}

TEST(PlanCli, ConstraintsThatCannotHoldNameTheTable) {
  TempDir dir;
  const std::string off = dir.write("off.json", R"([{"name": "a", "rows": 100, "dim": 8, "ranks": [4]}])");
  CliResult r = run_cli({"--tables", off, "--gpus", "4", "--model", "analytic", "-o", dir.path("p.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("table \"a\": ranks: rank 4 is not a device"), std::string::npos) << r.err;
  r = run_cli({"--tables", off, "--gpus", "8", "--sharding-types", "table_wise", "--model", "analytic", "-o",
               dir.path("p.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string crowded = dir.write("crowded.json", R"([{"name": "left", "rows": 20000000, "dim": 8, "ranks": [1]},
                                                            {"name": "right", "rows": 20000000, "dim": 8, "ranks": [1]}])");
  r = run_cli(
      {"--tables", crowded, "--gpus", "4", "--mem-per-gpu", "1GiB", "--model", "analytic", "-o", dir.path("c.json")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("the tables pinned to ranks [1] (\"left\", \"right\") need"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("c.json")));
  const std::string none =
      dir.write("none.json", R"([{"name": "r", "rows": 100, "dim": 8, "sharding_types": ["row_wise"]}])");
  r = run_cli({"--tables", none, "--gpus", "4", "--sharding-types", "table_wise,column_wise", "--model", "analytic",
               "-o", dir.path("n.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("table \"r\": sharding_types: none of \"row_wise\""), std::string::npos) << r.err;
}

// HugeCTR's 470B benchmark (data/configs): 5 billion rows of 32 columns fit no 80 GB GPU but in row
// blocks. It plans on 64 GPUs; on 16 the message names the shortfall.
TEST(PlanCli, PlansHugeCtrs470BBenchmarkOrNamesTheShortfall) {
  TempDir dir;
  const std::string tables = source_path("data/configs/hugectr-7table-470b.json");
  const std::vector<std::string> common = {
      "--tables",        tables,    "--mem-per-gpu", "80GB", "--optimizer",
      "rowwise_adagrad", "--model", "analytic",      "-o",   dir.path("plan.json")};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--gpus", "64"});
  CliResult r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_valid(dir.path("plan.json"), tables);
  args = common;
  args.insert(args.end(), {"--gpus", "16", "-o", dir.path("none.json")});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("the tables need 1.65 TiB in total but 16 devices offer 1.16 TiB (74.51 GiB each): 497.36 GiB "
                       "short; the largest tables: \"g3_t0\" 614.67 GiB"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("none.json")));
}

// With 2 TB of host memory per host the same 16 GPUs hold it: the tables HBM cannot hold start as row-wise
// blocks kept in host memory behind an HBM cache (fused_uvm_caching), every GPU's HBM within its cap.
TEST(PlanCli, KeepsHugeCtrs470BInHostMemoryWhenHbmIsShort) {
  TempDir dir;
  const std::string tables = source_path("data/configs/hugectr-7table-470b.json");
  const std::string out = dir.path("plan.json");
  CliResult r = run_cli({"--tables", tables, "--gpus", "16", "--mem-per-gpu", "80GB", "--optimizer", "rowwise_adagrad",
                         "--model", "analytic", "--ddr-per-host", "2TB", "--host-link-GBps", "25", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_valid(out, tables);
  const auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["ddr_per_host_bytes"], 2'000'000'000'000);
  EXPECT_EQ(plan["host_link_GBps"], 25.0);
  int cached = 0;
  for (const auto& table : plan["tables"]) {
    if (table["compute_kernel"] != "fused_uvm_caching") continue;
    ++cached;
    EXPECT_EQ(table["sharding_type"], "row_wise");
    const double load_factor = table["cache_params"]["load_factor"];
    EXPECT_GT(load_factor, 0.0);
    EXPECT_LT(load_factor, 1.0);
  }
  EXPECT_GE(cached, 1);
  for (const auto& device : plan["devices"]) {
    EXPECT_LE(device["memory_bytes"].get<int64_t>(), plan["usable_memory_per_device_bytes"].get<int64_t>());
    EXPECT_GT(device["ddr_bytes"].get<int64_t>(), 0);
    EXPECT_GT(device["cache_ms"].get<double>(), 0.0);
  }
  EXPECT_LE(plan["summary"]["max_host_ddr_bytes"].get<int64_t>(), 2'000'000'000'000);
  EXPECT_NE(r.out.find("host memory: max"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cached \"g3_t0\""), std::string::npos) << r.out;
  // The packing attempts that fell short say by how much (#62: they said "0 B").
  EXPECT_EQ(r.err.find(" 0 B of the tables' memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GiB of the tables' memory found no device"), std::string::npos) << r.err;

  // Too little host memory: exit 3, naming both memories.
  r = run_cli({"--tables", tables, "--gpus", "16", "--mem-per-gpu", "80GB", "--optimizer", "rowwise_adagrad", "--model",
               "analytic", "--ddr-per-host", "100GB", "-o", dir.path("none.json")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("of host memory"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("none.json")));
}

// A model that fits HBM is planned exactly as before, host memory or not.
TEST(PlanCli, HostMemoryLeavesAPlanThatFitsHbmAsItWas) {
  TempDir dir;
  CliResult without = run_cli({"--tables", kSmall, "--gpus", "4", "--no-compare", "-o", dir.path("a.json")});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  CliResult with =
      run_cli({"--tables", kSmall, "--gpus", "4", "--no-compare", "--ddr-per-host", "1TB", "-o", dir.path("b.json")});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  auto a = nlohmann::json::parse(read_file(dir.path("a.json")));
  auto b = nlohmann::json::parse(read_file(dir.path("b.json")));
  EXPECT_EQ(a["tables"], b["tables"]);
  EXPECT_EQ(a["summary"]["max_total_ms"], b["summary"]["max_total_ms"]);
  EXPECT_FALSE(a.contains("ddr_per_host_bytes"));
  EXPECT_EQ(b["ddr_per_host_bytes"], 1'000'000'000'000);
}

TEST(PlanCli, TimeLimitCutsTheSearchShortAndSaysSo) {
  TempDir dir;
  std::string out = dir.path("plan.json");
  // Every step would run (no patience, a huge budget); a millisecond ends the search after the unsplit
  // placement, and the refinement with it.
  CliResult r = run_cli({"--tables", kExample, "--gpus", "128", "--patience", "0", "--steps", "1000000", "--time-limit",
                         "0.001", "--no-compare", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: the time limit of 0.001 s cut the search short"), std::string::npos) << r.out;
  auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["search"]["cut_short"], true);
  EXPECT_EQ(plan["search"]["stopped"], "time limit");
  EXPECT_LT(plan["search"]["steps"].get<int>(), 1000000);
  expect_valid(out, kExample);

  // Without a limit the search says how it ended, and the report has no note.
  CliResult full = run_cli({"--tables", kSmall, "--gpus", "4", "-o", dir.path("full.json"), "--no-compare"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(full.out.find("cut the search short"), std::string::npos) << full.out;
  auto done = nlohmann::json::parse(read_file(dir.path("full.json")));
  EXPECT_EQ(done["search"]["cut_short"], false);
  EXPECT_TRUE(done["search"]["time_limit_seconds"].is_null());
}

TEST(PlanCli, HardwareProfileSetsTheClusterAndTheAllToAllSaysWhereItComesFrom) {
  TempDir dir;
  std::string out = dir.path("plan.json");
  CliResult r =
      run_cli({"--tables", kSmall, "--gpus", "16", "--hardware", "h100-sxm-ib400", "--no-compare", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(8 per host, hardware h100-sxm-ib400)"), std::string::npos) << r.out;
  auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["hardware"], "h100-sxm-ib400");
  EXPECT_EQ(plan["devices_per_host"], 8);
  EXPECT_EQ(plan["memory_per_device_bytes"], 80'000'000'000);
  // The neural model says where its all-to-all comes from (builds without LibTorch plan with the analytic
  // model, which takes the profile's bandwidths and has no such provenance).
  const bool neural = plan["cost_model"].get<std::string>().rfind("neural:", 0) == 0;
  if (neural) {
    EXPECT_NE(r.out.find("all-to-all for h100-sxm-ib400: the hierarchical estimate from its profile's figures"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(plan["cost_model_hardware"]["planned_for"]["profile"], "h100-sxm-ib400");
  }
  expect_valid(out, kSmall);
  // NVLink and InfiniBand move these widths in well under a millisecond; this CPU's loopback does not.
  for (const auto& device : plan["devices"]) EXPECT_LT(device["bw_comm_ms"].get<double>(), 1.0) << device;

  // Flags still win over the profile; evaluate reads the profile back from the plan.
  std::string four = dir.path("four.json");
  CliResult r4 = run_cli({"--tables", kSmall, "--gpus", "16", "--hardware", "h100-sxm-ib400", "--gpus-per-host", "4",
                          "--mem-per-gpu", "40GB", "--no-compare", "-o", four});
  ASSERT_EQ(r4.exit_code, 0) << r4.err;
  auto plan4 = nlohmann::json::parse(read_file(four));
  EXPECT_EQ(plan4["devices_per_host"], 4);
  EXPECT_EQ(plan4["memory_per_device_bytes"], 40'000'000'000);
  CliResult eval = run_cli({"evaluate", "--plan", out, "--tables", kSmall});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  if (neural) {
    EXPECT_NE(eval.out.find("h100-sxm-ib400"), std::string::npos) << eval.out;
  }

  CliResult bad =
      run_cli({"--tables", kSmall, "--gpus", "4", "--hardware", "no-such-cluster", "-o", dir.path("x.json")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--hardware: no profile named 'no-such-cluster'"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("x.json")));
}

// Without --model (and $SHARDPLAN_MODEL) GPUs are planned with the bundled GPU model on its profile's
// links, and the report says the model was the default; the CPU model answers to its name and its former one.
TEST(PlanCli, PlansGpusWithTheGpuModelUnlessAnotherIsNamed) {
  if (std::getenv("SHARDPLAN_MODEL") != nullptr) GTEST_SKIP() << "$SHARDPLAN_MODEL names the model here";
  TempDir dir;
  const std::string gpu = dir.path("gpu.json");
  CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "--no-compare", "-o", gpu});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(read_file(gpu));
  EXPECT_EQ(plan["cost_model"], "neural:h100");
  EXPECT_EQ(plan["hardware"], "h100-sxm-ib400");
  EXPECT_NE(r.out.find("cost (neural:h100, the default model): "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("none named, so the bundled GPU model (h100) on h100-sxm-ib400's links"), std::string::npos)
      << r.err;

  // A profile named keeps its links under the default model.
  CliResult a100 = run_cli(
      {"--tables", kSmall, "--gpus", "4", "--hardware", "a100-sxm-ib200", "--no-compare", "-o", dir.path("a.json")});
  ASSERT_EQ(a100.exit_code, 0) << a100.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.path("a.json")))["hardware"], "a100-sxm-ib200");

  for (const char* name : {"cpu-2core", "default"}) {
    const std::string cpu = dir.path(std::string(name) + ".json");
    CliResult c = run_cli({"--tables", kSmall, "--gpus", "4", "--no-compare", "--model", name, "-o", cpu});
    ASSERT_EQ(c.exit_code, 0) << name << ": " << c.err;
    auto cpu_plan = nlohmann::json::parse(read_file(cpu));
    EXPECT_EQ(cpu_plan["cost_model"], "neural:cpu-2core") << name;
    EXPECT_FALSE(cpu_plan.contains("hardware")) << name;
    EXPECT_EQ(c.out.find("the default model"), std::string::npos) << c.out;
    EXPECT_EQ(c.err.find("is now named") != std::string::npos, std::string(name) == "default") << c.err;
  }
  // evaluate scores any plan with the GPU model unless told otherwise.
  CliResult eval = run_cli({"evaluate", "--plan", dir.path("cpu-2core.json"), "--tables", kSmall});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("scored by neural:h100"), std::string::npos) << eval.out;
}

TEST(PlanCli, SubcommandNameIsOptional) {
  TempDir dir;
  CliResult a = run_cli({"plan", "--tables", kSmall, "--gpus", "2", "-o", dir.path("a.json"), "--quiet"});
  CliResult b = run_cli({"--tables", kSmall, "--gpus", "2", "-o", dir.path("b.json"), "--quiet"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(read_file(dir.path("a.json")), read_file(dir.path("b.json")));
}

TEST(PlanCli, SameInputAndSeedGiveTheSamePlan) {
  TempDir dir;
  auto plan_with_seed = [&](const std::string& name, const std::string& seed) {
    CliResult r = run_cli(
        {"--tables", kExample, "--gpus", "16", "--algo", "random", "--seed", seed, "-o", dir.path(name), "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(dir.path(name));
  };
  std::string first = plan_with_seed("a.json", "11");
  std::string second = plan_with_seed("b.json", "11");
  std::string other = plan_with_seed("c.json", "12");
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
}

TEST(PlanCli, DashWritesJsonToStdoutAndTheReportToStderr) {
  CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(r.out);  // nothing but JSON on stdout
  EXPECT_EQ(plan["format"], "shard-plan/1");
  EXPECT_NE(r.err.find("plan: neuroshard on 4 GPUs"), std::string::npos) << r.err;
}

TEST(PlanCli, QuietPrintsNothingAndOverwritesAtomically) {
  TempDir dir;
  std::string out = dir.write("plan.json", "old content");
  CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "-o", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(nlohmann::json::parse(read_file(out))["num_devices"], 4);
  EXPECT_EQ(dir.files(), std::vector<std::string>{"plan.json"});  // no temporary left behind
}

TEST(PlanCli, OptimizerAndReserveShapeTheMemoryBudget) {
  TempDir dir;
  std::string out = dir.path("plan.json");
  CliResult r = run_cli({"--tables", kSmall, "--gpus", "4", "--mem-per-gpu", "8GB", "--reserve", "0.15", "--optimizer",
                         "adam", "-o", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(plan["memory_per_device_bytes"], 8'000'000'000);
  EXPECT_EQ(plan["usable_memory_per_device_bytes"], 6'800'000'000);
  EXPECT_EQ(plan["optimizer"], "adam");
  for (const auto& d : plan["devices"]) EXPECT_LE(d["memory_bytes"].get<int64_t>(), 6'800'000'000);
  expect_valid(out, kSmall);
}

TEST(PlanCli, HelpAndVersion) {
  CliResult help = run_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--tables"), std::string::npos);
  EXPECT_NE(help.out.find("Example:"), std::string::npos);
  EXPECT_NE(help.out.find("validate"), std::string::npos);
  CliResult version = run_cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("shard-plan 0.", 0), 0u) << version.out;
  EXPECT_TRUE(version.out.find("LibTorch ") != std::string::npos ||
              version.out.find("without LibTorch") != std::string::npos)
      << version.out;
  CliResult validate_help = run_cli({"validate", "--help"});
  EXPECT_EQ(validate_help.exit_code, 0);
  EXPECT_NE(validate_help.out.find("Example:"), std::string::npos);
}

}  // namespace
}  // namespace shardplan::e2e
