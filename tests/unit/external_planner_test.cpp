// Planners run as another program: what they are told, and how their exits reach the caller. The program
// here is a shell script standing in for `python -m shardplan.torchrec.baseline`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../support/message_of.hpp"
#include "../support/temp_dir.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/subprocess.hpp"
#include "shardplan/planners/external_planner.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::message_of;
using testing::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Records its arguments in $ARGS_FILE, then copies $PLAN to the -o path, or exits $EXIT saying $MESSAGE.
constexpr const char* kScript = R"(#!/bin/sh
echo "$@" > "$ARGS_FILE"
if [ -n "$EXIT" ]; then echo "a traceback line" >&2; echo "$MESSAGE" >&2; exit "$EXIT"; fi
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then cp "$PLAN" "$2"; fi
  shift
done
)";

constexpr const char* kPlan = R"({"format": "shard-plan/1", "algorithm": "fake", "num_devices": 2,
 "devices_per_host": 8, "memory_per_device_bytes": 1073741824, "optimizer": "sgd",
 "tables": [{"name": "a", "rows": 100, "dim": 8, "sharding_type": "table_wise", "compute_kernel": "fused",
             "ranks": [1], "shards": [{"rank": 1, "shard_offsets": [0, 0], "shard_sizes": [100, 8],
                                        "placement": "rank:1/cuda:1"}]},
            {"name": "b", "rows": 50, "dim": 16, "sharding_type": "column_wise", "compute_kernel": "fused",
             "ranks": [0, 1], "shards": [{"rank": 0, "shard_offsets": [0, 0], "shard_sizes": [50, 8],
                                           "placement": "rank:0/cuda:0"},
                                          {"rank": 1, "shard_offsets": [0, 8], "shard_sizes": [50, 8],
                                           "placement": "rank:1/cuda:1"}]}]})";

class ExternalPlannerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Planner> planner(std::vector<std::string> env) {
    env.push_back("ARGS_FILE=" + dir.path("args"));
    env.push_back("PLAN=" + dir.write("plan.json", kPlan));
    return make_external_planner("fake_planner", {{"/bin/sh", dir.write("fake.sh", kScript)}, env},
                                 {"--compute-device", "cpu"}, ShardingTypeSet::table_and_column());
  }
  std::vector<Table> tables = {testing::make_table("a", 100, 8), testing::make_table("b", 50, 16)};
  Cluster cluster = testing::cluster_of(2, 1ll << 30);
  TempDir dir;
};

TEST_F(ExternalPlannerTest, ReadsTheProgramsPlanAndTellsItTheCluster) {
  cluster.reserve_fraction = 0.5;
  Plan plan = planner({})->plan(tables, cluster);
  EXPECT_EQ(plan.algorithm, "fake_planner");
  ASSERT_EQ(plan.tables.size(), 2u);
  EXPECT_EQ(plan.tables[1].type, ShardingType::kColumnWise);
  EXPECT_EQ(plan.cluster.reserve_fraction, 0.5);  // the caller's cluster, not the file's
  const std::string args = read_text(dir.path("args"));
  for (const char* expected : {"--gpus 2 ", "--gpus-per-host 8 ", "--mem-per-gpu 536870912 ", "--optimizer sgd ",
                               "--sharding-types table_wise,column_wise ", " --compute-device cpu"}) {
    EXPECT_NE(args.find(expected), std::string::npos) << expected << " not in: " << args;
  }
}

TEST_F(ExternalPlannerTest, ExitsBecomeTypedErrorsCarryingTheProgramsLastWords) {
  auto infeasible = planner({"EXIT=3", "MESSAGE=no plan fits"});
  EXPECT_NE(message_of<InfeasibleError>([&] { infeasible->plan(tables, cluster); }).find("fake_planner: "),
            std::string::npos);
  EXPECT_NE(message_of<InfeasibleError>([&] { infeasible->plan(tables, cluster); }).find("no plan fits"),
            std::string::npos);
  auto bad = planner({"EXIT=2", "MESSAGE=bad tables"});
  EXPECT_NE(message_of<InputError>([&] { bad->plan(tables, cluster); }).find("bad tables"), std::string::npos);
  try {
    planner({"EXIT=1", "MESSAGE=it broke"})->plan(tables, cluster);
    FAIL() << "no error";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("fake_planner: /bin/sh exited with 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("it broke"), std::string::npos) << e.what();
  }
}

TEST_F(ExternalPlannerTest, TheClusterAndTheBatchPerRankAreItsArguments) {
  auto with_batch = make_external_planner("fake_planner",
                                          {{"/bin/sh", dir.write("fake.sh", kScript)},
                                           {"ARGS_FILE=" + dir.path("args"), "PLAN=" + dir.write("plan.json", kPlan)}},
                                          {}, ShardingTypeSet::all(), {0, std::nullopt, 2048});
  with_batch->plan(tables, cluster);
  EXPECT_NE(read_text(dir.path("args")).find("--batch-size 1024"), std::string::npos) << read_text(dir.path("args"));
}

TEST_F(ExternalPlannerTest, TorchRecsOwnTimeoutIsHalfTheTimeLimit) {
  PlannerConfig config;
  config.torchrec_program = {{"/bin/sh", dir.write("fake.sh", kScript)},
                             {"ARGS_FILE=" + dir.path("args"), "PLAN=" + dir.write("plan.json", kPlan)}};
  config.neuroshard.time_limit_seconds = 120;
  make_planner("torchrec_planner_cpu", config)->plan(tables, cluster);
  const std::string args = read_text(dir.path("args"));
  EXPECT_NE(args.find("--compute-device cpu"), std::string::npos) << args;
  EXPECT_NE(args.find("--timeout-seconds 60"), std::string::npos) << args;
}

TEST_F(ExternalPlannerTest, TheCw32NamesAskTorchRecFor32ColumnShards) {
  PlannerConfig config;
  config.torchrec_program = {{"/bin/sh", dir.write("fake.sh", kScript)},
                             {"ARGS_FILE=" + dir.path("args"), "PLAN=" + dir.write("plan.json", kPlan)}};
  for (const auto& [name, device, min_partition] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"torchrec_planner", "cuda", false},
                                                               {"torchrec_planner_cw32", "cuda", true},
                                                               {"torchrec_planner_cpu", "cpu", false},
                                                               {"torchrec_planner_cpu_cw32", "cpu", true}}) {
    make_planner(name, config)->plan(tables, cluster);
    const std::string args = read_text(dir.path("args"));
    EXPECT_NE(args.find("--compute-device " + device), std::string::npos) << name << ": " << args;
    EXPECT_EQ(args.find("--min-partition 32") != std::string::npos, min_partition) << name << ": " << args;
  }
}

TEST_F(ExternalPlannerTest, APlanPastItsTimeLimitIsStopped) {
  const std::string sleeper = dir.write("sleep.sh", "#!/bin/sh\nsleep 30\n");
  auto slow = make_external_planner("slow_planner", {{"/bin/sh", sleeper}, {}}, {}, ShardingTypeSet::all(),
                                    {0.3, std::nullopt});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(
      message_of<DeadlinePassed>([&] { slow->plan(tables, cluster); }).find("slow_planner: the time limit passed"),
      std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST_F(ExternalPlannerTest, APlanForOtherTablesIsRefused) {
  tables[0].rows = 99;
  EXPECT_THROW(planner({})->plan(tables, cluster), InputError);
}

TEST(RunProcess, CapturesBothStreamsAndTheExitCode) {
  ProcessResult r = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.output, "out\n");
  EXPECT_EQ(r.errors, "err\n");
  EXPECT_EQ(run_process({"/bin/sh", "-c", "echo \"$SHARDPLAN_TEST_VALUE\""}, {"SHARDPLAN_TEST_VALUE=x y"}).output,
            "x y\n");
  EXPECT_EQ(run_process({"/bin/sh", "-c", "kill -TERM $$"}).exit_code, 128 + 15);
  EXPECT_THROW(run_process({"/nonexistent/program"}), RuntimeFailure);
}

TEST(RunProcess, ATimeoutKillsItAndWhatItStarted) {
  TempDir dir;
  const std::string marker = dir.path("child-survived");
  // The child outlives its parent's kill unless the whole group goes.
  ProcessResult r = run_process({"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 30"}, {}, 0.3);
  EXPECT_TRUE(r.timed_out);
  ::sleep(3);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(LineProcess, AnswersLineByLineAndReportsItsEnd) {
  LineProcess echo({"/bin/sh", "-c", "while read line; do echo \"got $line\"; done; echo bye >&2"}, {});
  EXPECT_EQ(echo.ask("one", 10), "got one");
  EXPECT_EQ(echo.ask("two", 10), "got two");
  LineProcess quiet({"/bin/sh", "-c", "read line; sleep 30"}, {});
  EXPECT_NE(message_of<RuntimeFailure>([&] { quiet.ask("hello", 0.3); }).find("said nothing within 0.3 s"),
            std::string::npos);
  LineProcess gone({"/bin/sh", "-c", "echo it failed >&2; exit 1"}, {});
  const std::string said = message_of<RuntimeFailure>([&] { gone.read_line(10); });
  EXPECT_NE(said.find("exited"), std::string::npos) << said;
  EXPECT_NE(said.find("it failed"), std::string::npos) << said;
  EXPECT_THROW(gone.ask("more", 1), RuntimeFailure);  // its pipe is closed: EPIPE, not SIGPIPE
}

TEST(TemporaryDirectory, IsRemovedWithItsContent) {
  std::string path;
  {
    TemporaryDirectory dir("shard-plan-test");
    path = dir.path();
    std::ofstream(path + "/f") << "x";
    EXPECT_TRUE(std::filesystem::is_directory(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace shardplan
