// shard-plan check-cache-model: the cache model's miss rate against the simulated LRU, as a user runs it.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

// Four tables of data/pool.json (small enough to simulate in a moment) and one whose batch touches most
// of its rows, which the check leaves out (2D/R > 0.1).
const char* kTables = R"({"tables": [
  {"dim": 32, "name": "t45", "pooling_factor": 64.4317, "rows": 6325, "reuse_hist": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
   0.0, 0.0, 0.0, 0.0, 0.084459, 0.108108, 0.148649, 0.182432, 0.175676, 0.158784, 0.141892]},
  {"dim": 32, "name": "t220", "pooling_factor": 0.4845, "rows": 84131, "reuse_hist": [0.01619, 0.028571, 0.089524,
   0.199048, 0.275238, 0.20381, 0.101905, 0.049524, 0.022857, 0.009524, 0.002857, 0.000952, 0.0, 0.0, 0.0, 0.0, 0.0]},
  {"dim": 16, "name": "t394", "pooling_factor": 0.9128, "rows": 35167, "reuse_hist": [0.0, 0.242678, 0.230126,
   0.205021, 0.146444, 0.07113, 0.029289, 0.016736, 0.012552, 0.008368, 0.008368, 0.004184, 0.008368, 0.008368,
   0.004184, 0.004184, 0.0]},
  {"dim": 32, "name": "t437", "pooling_factor": 0.9878, "rows": 67743, "reuse_hist": [0.288134, 0.138418, 0.152542,
   0.149718, 0.115819, 0.062147, 0.028249, 0.016949, 0.011299, 0.008475, 0.00565, 0.00565, 0.00565, 0.00565,
   0.002825, 0.002825, 0.0]},
  {"dim": 16, "name": "crowded", "pooling_factor": 4.0, "rows": 5000, "reuse_hist": [1.0, 0.0, 0.0, 0.0, 0.0, 0.0,
   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}
]})";

std::vector<std::string> check_args(const std::string& tables, std::vector<std::string> extra) {
  std::vector<std::string> args = {"check-cache-model", "--tables", tables, "--seed", "4", "--batch-size", "65536"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(CheckCacheModelCli, JsonHasPredictedAndSimulatedRatesWithinTheTarget) {
  TempDir dir;
  const std::string tables = dir.write("tables.json", kTables);
  CliResult r = run_cli(check_args(tables, {"--count", "3", "--persistence", "1,0", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["batch_size"], 65536);
  EXPECT_EQ(doc["qualifying_tables"], 4);
  ASSERT_EQ(doc["tables"].size(), 3u);
  double largest = 0.0;
  for (const auto& table : doc["tables"]) {
    EXPECT_NE(table["name"], "crowded");
    ASSERT_EQ(table["runs"].size(), 2u) << table["name"];
    EXPECT_EQ(table["runs"][0]["persistence"], 1.0);
    EXPECT_EQ(table["runs"][1]["persistence"], 0.0);
    for (const auto& run : table["runs"]) {
      ASSERT_FALSE(run["levels"].empty());
      for (const auto& level : run["levels"]) {
        EXPECT_GE(level["load_factor"].get<double>(), table["min_load_factor"].get<double>());
        const double predicted = level["predicted"]["miss_rate_unique"];
        const double simulated = level["simulated"]["miss_rate_unique"];
        EXPECT_NEAR(level["delta_pp"].get<double>(), 100.0 * (predicted - simulated), 1e-9);
        EXPECT_LE(std::abs(level["delta_pp"].get<double>()), 10.0) << table["name"] << " " << level["load_factor"];
        EXPECT_EQ(level["simulated"]["calls"], run["measured_batches"]);
        EXPECT_GT(level["simulated"]["unique_indices"].get<int64_t>(), 0);
        if (run["persistence"] == 0.0) {
          // Independent batches: 1 - C/R exactly in the model.
          const double cached = level["cache_slots"].get<double>() / table["rows"].get<double>();
          EXPECT_NEAR(predicted, 1.0 - cached, 1e-9);
        }
        largest = std::max(largest, std::abs(level["delta_pp"].get<double>()));
      }
    }
  }
  EXPECT_NEAR(doc["max_abs_delta_pp"].get<double>(), largest, 1e-12);
  EXPECT_TRUE(doc["max_abs_delta_pp_by_persistence"].contains("1"));
  EXPECT_TRUE(doc["max_abs_delta_pp_by_persistence"].contains("0"));
  EXPECT_EQ(r.err.find("{"), std::string::npos) << "machine output goes to stdout only";
}

TEST(CheckCacheModelCli, SameSeedSameFiguresAndATextTable) {
  TempDir dir;
  const std::string tables = dir.write("tables.json", kTables);
  const auto args = check_args(
      tables, {"--count", "2", "--load-factors", "0.2,0.5", "--persistence", "0.5", "--batches", "50", "--json"});
  CliResult a = run_cli(args);
  CliResult b = run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  auto doc = nlohmann::json::parse(a.out);
  EXPECT_EQ(doc["tables"][0]["runs"][0]["measured_batches"], 50);

  CliResult text = run_cli(
      check_args(tables, {"--count", "2", "--load-factors", "0.2,0.5", "--persistence", "0.5", "--batches", "50"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("m_u pred"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("largest |m_u predicted - simulated|"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 of the 4 tables"), std::string::npos) << text.out;
}

TEST(CheckCacheModelCli, BadFlagsAreBadUsageNamingFlagAndValue) {
  TempDir dir;
  const std::string tables = dir.write("tables.json", kTables);
  struct Case {
    std::vector<std::string> extra;
    const char* message;
  };
  for (const Case& c : {Case{{"--load-factors", "0.1,1.5"}, "--load-factors: must be in (0, 1), got 1.5"},
                        Case{{"--load-factors", "0"}, "--load-factors: must be in (0, 1), got 0"},
                        Case{{"--persistence", "1,2"}, "--persistence: must be in [0, 1], got 2"},
                        Case{{"--count", "0"}, "--count: must be 1 or more tables, got 0"},
                        Case{{"--batches", "-3"}, "--batches: must be 0 (automatic) or more, got -3"},
                        Case{{"--batch-size", "0"}, "--batch-size: must be 1 to"},
                        Case{{"--warmup-rows", "0"}, "--warmup-rows: must be 1 or more, got 0"},
                        Case{{"--load-factors", "half"}, "--load-factors"}}) {
    CliResult r = run_cli(check_args(tables, c.extra));
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  const std::string crowded =
      dir.write("crowded.json", R"({"tables": [{"name": "c", "rows": 5000, "dim": 16, "pooling_factor": 4.0,
                                      "reuse_hist": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]})");
  CliResult r = run_cli(check_args(crowded, {}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tables: no table of"), std::string::npos) << r.err;
}

// A table of 1e11 rows whose batches touch few of them: simulated at 1/k its rows would still need gigabytes
// (#62: killed past 4 GB). It is scaled further to bound the memory, and says so.
TEST(CheckCacheModelCli, AHugeTableIsSimulatedWithinBoundedMemory) {
  TempDir dir;
  const std::string tables =
      dir.write("huge.json", R"([{"name": "h", "rows": 100000000000, "dim": 16, "pooling_factor": 500}])");
  CliResult r = run_cli(check_args(tables, {"--count", "1", "--load-factors", "0.5", "--persistence", "1", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("to bound the simulation's memory"), std::string::npos) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& entry = doc["tables"][0];
  EXPECT_TRUE(entry["scale_capped_for_memory"].get<bool>());
  EXPECT_LE(entry["simulated_rows"].get<int64_t>(), int64_t{1} << 24);
}

}  // namespace
}  // namespace shardplan::e2e
