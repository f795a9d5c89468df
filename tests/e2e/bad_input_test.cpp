// Every kind of bad input exits 2 (or 3 when the tables cannot fit), says what is wrong and where, and
// leaves no plan file behind.
#include <gtest/gtest.h>

#include "cli_runner.hpp"

namespace shardplan::e2e {
namespace {

struct BadCase {
  std::string name;
  std::string tables;             // content of tables.json in a fresh directory
  std::vector<std::string> args;  // extra flags (default cluster: 4 GPUs of 1 GiB)
  int exit_code;
  std::string message;  // a fragment stderr must contain
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

const std::string kOk = R"([{"name": "a", "rows": 1000, "dim": 16}])";

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, ExitsWithCodeAndMessageAndWritesNoPlan) {
  const BadCase& c = GetParam();
  TempDir dir;
  std::string tables = dir.write("tables.json", c.tables);
  std::string out = dir.path("plan.json");
  std::vector<std::string> args = {"--tables", tables, "--gpus", "4", "--mem-per-gpu", "1GiB", "-o", out};
  for (const auto& a : c.args) args.push_back(a);
  CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"tables.json"});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInput,
    ::testing::Values(
        BadCase{"malformed_json", R"([{"rows": 10, "dim": 8)", {}, 2, "tables.json: invalid JSON: parse error"},
        BadCase{"empty_file", "", {}, 2, "tables.json: file is empty"},
        BadCase{"unknown_sharding_type",
                kOk,
                {"--sharding-types", "table_wise,grid_shard"},
                2,
                "--sharding-types: unknown sharding type \"grid_shard\""},
        BadCase{"sharding_types_without_table_wise",
                kOk,
                {"--sharding-types", "row_wise"},
                2,
                "--sharding-types: must include table_wise"},
        BadCase{"no_column_slices_for_a_large_table",
                R"([{"name": "wide", "rows": 10000000, "dim": 64}])",
                {"--sharding-types", "table_wise,data_parallel", "--no-baseline-starts"},
                3,
                "and may not be column_wise (sharding types table_wise,data_parallel)"},
        BadCase{"not_a_list", R"({"rows": 10})", {}, 2, "expected a JSON array of tables"},
        BadCase{"no_tables", R"({"tables": []})", {}, 2, "tables: no tables given"},
        BadCase{"rows_wrong_type", R"([{"rows": "ten", "dim": 8}])", {}, 2, "tables[0].rows: must be an integer"},
        BadCase{"dim_wrong_type",
                R"([{"rows": 10, "dim": [8]}])",
                {},
                2,
                "tables[0].dim: must be a positive multiple of 4, got [8]"},
        BadCase{"dim_not_multiple_of_4",
                R"([{"rows": 10, "dim": 8}, {"rows": 10, "dim": 8}, {"rows": 10, "dim": 8}, {"rows": 10, "dim": 13}])",
                {},
                2,
                "tables.json: tables[3].dim: must be a positive multiple of 4, got 13"},
        BadCase{"zero_rows",
                R"([{"rows": 0, "dim": 8}])",
                {},
                2,
                "tables[0].rows: must be an integer in [1, 1000000000000], got 0"},
        BadCase{"negative_rows",
                R"([{"rows": -3, "dim": 8}])",
                {},
                2,
                "tables[0].rows: must be an integer in [1, 1000000000000], got -3"},
        BadCase{"huge_rows", R"([{"rows": 1e300, "dim": 8}])", {}, 2, "tables[0].rows"},
        BadCase{
            "negative_pooling", R"([{"rows": 10, "dim": 8, "pooling_factor": -2}])", {}, 2, "tables[0].pooling_factor"},
        BadCase{"short_reuse_hist",
                R"([{"rows": 10, "dim": 8, "reuse_hist": [1, 2]}])",
                {},
                2,
                "tables[0].reuse_hist: must be an array of 17 numbers"},
        BadCase{"duplicate_names",
                R"([{"name": "x", "rows": 10, "dim": 8}, {"name": "x", "rows": 10, "dim": 8}])",
                {},
                2,
                "tables[1].name: duplicate name \"x\" (also tables[0])"},
        BadCase{"table_larger_than_any_gpu",
                R"([{"name": "big", "rows": 100000000, "dim": 64}])",
                {"--algo", "size_greedy"},
                3,
                "table \"big\" (100000000 x 64, fp32) needs 23.84 GiB"},
        BadCase{"table_no_split_can_fit",
                R"([{"name": "narrow", "rows": 100000000, "dim": 4}])",
                {"--sharding-types", "table_wise,column_wise", "--no-baseline-starts"},
                3,
                "table \"narrow\" (100000000 x 4) does not fit a device even split into column pieces of 4 columns"},
        BadCase{"tables_larger_than_cluster",
                R"([{"rows": 50000000, "dim": 4}, {"rows": 50000000, "dim": 4}, {"rows": 50000000, "dim": 4},
                    {"rows": 50000000, "dim": 4}, {"rows": 50000000, "dim": 4}, {"rows": 50000000, "dim": 4}])",
                {},
                3,
                "the tables need 4.47 GiB in total but 4 devices offer 4.00 GiB"},
        BadCase{"gpus_zero", kOk, {"--gpus", "0"}, 2, "--gpus: must be between 1 and 65536, got 0"},
        BadCase{"gpus_absurd", kOk, {"--gpus", "1000000"}, 2, "--gpus: must be between 1 and 65536, got 1000000"},
        BadCase{"bad_memory_unit", kOk, {"--mem-per-gpu", "16 parsecs"}, 2, "--mem-per-gpu: unknown unit"},
        BadCase{"bad_reserve", kOk, {"--reserve", "1.5"}, 2, "--reserve: must be in [0, 1), got 1.5"},
        BadCase{"bad_optimizer",
                kOk,
                {"--optimizer", "lamb"},
                2,
                "--optimizer: must be sgd, rowwise_adagrad, adagrad or adam, got 'lamb'"},
        BadCase{"unknown_algo", kOk, {"--algo", "magic"}, 2, "--algo: unknown planner \"magic\""},
        BadCase{"rivals_without_the_loop",
                kOk,
                {"--measure-loop-rivals", "torchrec"},
                2,
                "--measure-loop-rivals: only measured-in-the-loop planning has rivals"},
        // #62: host memory's flags given empty or out of range are refused, never replaced by a default.
        BadCase{"host_link_zero",
                kOk,
                {"--host-link-GBps", "0"},
                2,
                "--host-link-GBps: must be a number of GB/s in [1e-09, 1e+09], got '0'"},
        BadCase{"host_link_negative", kOk, {"--host-link-GBps", "-5"}, 2, "--host-link-GBps: must be a number"},
        BadCase{"host_link_nan", kOk, {"--host-link-GBps", "nan"}, 2, "--host-link-GBps: must be a number"},
        BadCase{"host_link_empty", kOk, {"--host-link-GBps", ""}, 2, "--host-link-GBps: must be a number"},
        BadCase{"host_link_below_what_a_plan_carries", kOk, {"--host-link-GBps", "1e-12"}, 2, "got '1e-12'"},
        BadCase{"ddr_per_host_empty", kOk, {"--ddr-per-host", ""}, 2, "--ddr-per-host: expected a size, got ''"},
        BadCase{"duplicate_key",
                R"([{"name": "a", "rows": 10000, "dim": 16, "rows": 99999999999}])",
                {},
                2,
                "tables.json: duplicate key \"rows\" in [0] (\"a\"): refused"},
        BadCase{"negative_seed", kOk, {"--seed", "-1"}, 2, "--seed: must be a non-negative integer, got -1"},
        BadCase{"table_row_wise_only_on_one_host",
                R"([{"name": "a", "rows": 100000, "dim": 16, "sharding_types": ["table_row_wise"]}])",
                {"--gpus-per-host", "4"},
                3,
                "table_row_wise spans whole hosts, so it needs more than one host and GPUs a multiple of the 4 per "
                "host (on one host allow row_wise, its equivalent)"},
        BadCase{"unknown_flag", kOk, {"--frobnicate"}, 2, "frobnicate"},
        BadCase{"bad_log_level", kOk, {"--log-level", "chatty"}, 2, "--log-level"},
        BadCase{"gpus_not_a_number", kOk, {"--gpus", "many"}, 2, "--gpus"}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) { return param_info.param.name; });

TEST(BadInputFiles, MissingTablesFileIsBadInput) {
  TempDir dir;
  CliResult r = run_cli({"--tables", dir.path("nope.json"), "--gpus", "4", "-o", dir.path("plan.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.json: no such file"), std::string::npos) << r.err;
  EXPECT_TRUE(dir.files().empty());
}

TEST(BadInputFiles, MissingRequiredFlagsAreBadUsage) {
  CliResult r = run_cli({"--gpus", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tables is required"), std::string::npos) << r.err;
}

TEST(BadInputFiles, UnwritableOutputIsARuntimeFailure) {
  CliResult r = run_cli(
      {"--tables", source_path("tests/fixtures/tables_small.json"), "--gpus", "4", "-o", "/nonexistent-dir/plan.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent-dir/plan.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shardplan::e2e
