// `shard-plan import-dlrm-dataset` end to end: the real binary on files written like torch.save.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dlrm_files.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/torch/dlrm_import.hpp"

namespace shardplan {
namespace {

using test::TempDir;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the binary in `cwd` with `args`; stdout and stderr are captured through files outside `cwd`.
CliRun run_cli(const std::string& cwd, const std::vector<std::string>& args) {
  static TempDir capture;
  std::string command = "cd " + quoted(cwd) + " && " + quoted(SHARDPLAN_BINARY);
  for (const auto& arg : args) command += " " + quoted(arg);
  command += " >" + quoted(capture.path("out")) + " 2>" + quoted(capture.path("err"));
  int status = std::system(command.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = test::read_bytes(capture.path("out"));
  run.err = test::read_bytes(capture.path("err"));
  return run;
}

std::string save_dataset(const TempDir& dir, const std::string& name, const test::Dataset& data) {
  std::string path = dir.path(name);
  test::save_triple(path, data.indices_tensor(), data.offsets_tensor(true), data.lengths_tensor());
  return path;
}

void expect_same_tables(const std::vector<Table>& a, const std::vector<Table>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].rows, b[i].rows);
    EXPECT_EQ(a[i].dim, b[i].dim);
    EXPECT_DOUBLE_EQ(a[i].pooling_factor, b[i].pooling_factor);
    ASSERT_TRUE(a[i].reuse_hist && b[i].reuse_hist);
    for (std::size_t k = 0; k < a[i].reuse_hist->size(); ++k) {
      EXPECT_NEAR((*a[i].reuse_hist)[k], (*b[i].reuse_hist)[k], 1e-15) << "table " << i << " bin " << k;
    }
  }
}

TEST(ImportDlrmCli, WritesALoadableTablesFile) {
  TempDir dir;
  test::Dataset data = test::random_dataset(7, 128, 11);
  std::string input = save_dataset(dir, "data.pt", data);
  CliRun run = run_cli(dir.path(""), {"import-dlrm-dataset", input, "-o", dir.path("out.json"), "--dim", "32"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("7 tables, batch size 128"), std::string::npos) << run.out;
  DlrmImportOptions options;
  options.dim = 32;
  expect_same_tables(load_tables(dir.path("out.json")), import_dlrm_dataset(input, options).tables);
}

TEST(ImportDlrmCli, DefaultsToTablesJsonAndCanWriteStdout) {
  TempDir dir;
  test::Dataset data = test::random_dataset(3, 50, 12);
  std::string input = save_dataset(dir, "data.pt", data);
  test::gzip_file(input, dir.path("data.pt.gz"));
  CliRun run = run_cli(dir.path(""), {"import-dlrm-dataset", "data.pt.gz"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<Table> expected = import_dlrm_dataset(input).tables;
  expect_same_tables(load_tables(dir.path("tables.json")), expected);

  CliRun to_stdout = run_cli(dir.path(""), {"import-dlrm-dataset", "data.pt", "-o", "-"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  expect_same_tables(parse_tables(nlohmann::json::parse(to_stdout.out), "stdout"), expected);
  EXPECT_NE(to_stdout.err.find("3 tables"), std::string::npos) << "summary goes to stderr: " << to_stdout.err;
}

TEST(ImportDlrmCli, BadFileExitsTwoAndWritesNothing) {
  TempDir dir;
  std::string input = save_dataset(dir, "data.pt", test::random_dataset(3, 50, 13));
  std::string bytes = test::read_bytes(input);
  std::string cut = dir.path("cut.pt");
  test::write_bytes(cut, bytes.substr(0, bytes.size() * 2 / 3));
  CliRun run = run_cli(dir.path(""), {"import-dlrm-dataset", cut, "-o", dir.path("out.json")});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(cut), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("truncated"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.json")));
  auto files = dir.files();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"cut.pt", "data.pt"}));  // not even a temporary left

  CliRun missing = run_cli(dir.path(""), {"import-dlrm-dataset", dir.path("absent.pt.gz")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;
  CliRun usage = run_cli(dir.path(""), {"import-dlrm-dataset"});
  EXPECT_EQ(usage.exit_code, 2);
}

TEST(ImportDlrmCli, AMissingTempDirIsNamedByItsFlag) {
  TempDir dir;
  std::string input = save_dataset(dir, "data.pt", test::random_dataset(3, 50, 14));
  test::gzip_file(input, dir.path("data.pt.gz"));
  CliRun run = run_cli(dir.path(""), {"import-dlrm-dataset", "data.pt.gz", "--temp-dir", dir.path("missing"), "-o",
                                      dir.path("out.json")});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--temp-dir: " + dir.path("missing") + " does not exist"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.json")));
}

}  // namespace
}  // namespace shardplan
