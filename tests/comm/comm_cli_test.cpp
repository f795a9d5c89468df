// `shard-plan collect-costs comm` end to end on loopback: W = 2 ranks (spawned, or started one by one as
// a launcher would), small batches, a handful of samples.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "process.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/comm_spawn.hpp"
#include "shardplan/costs/comm_workload.hpp"
#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan {
namespace {

using commtest::Process;
using commtest::read_lines;
using commtest::read_text;
using commtest::TempDir;
using namespace std::chrono_literals;

// Generous bounds: this runs on small, busy CI machines.
constexpr auto kRunLimit = 120s;

std::vector<std::string> spawn_args(const std::string& out, int samples, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{
      "collect-costs", "comm", "--world-size", "2",  "--spawn",     "--samples", std::to_string(samples),
      "--out",         out,    "--batch-size", "16", "--max-delay", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int run(const std::vector<std::string>& args, std::string* err = nullptr,
        const std::map<std::string, std::string>& env = {}) {
  Process process(args, env);
  auto code = process.wait_for(kRunLimit);
  if (err) *err = process.err();
  EXPECT_TRUE(code.has_value()) << "still running after the limit";
  return code.value_or(-1);
}

std::vector<CommSample> samples_in(const std::string& dir) {
  std::vector<CommSample> samples;
  int line_number = 0;
  for (const auto& line : read_lines(dir + "/samples.jsonl")) {
    samples.push_back(comm_sample_from_json(nlohmann::json::parse(line), dir + ":" + std::to_string(++line_number)));
  }
  return samples;
}

// Waits until `dir` holds at least `count` samples (or the process ends).
bool wait_for_samples(const std::string& dir, std::size_t count, Process& process) {
  auto deadline = std::chrono::steady_clock::now() + kRunLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_lines(dir + "/samples.jsonl").size() >= count) return true;
    if (process.wait_for(0s)) return false;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

CommWorkloadConfig default_workload(int world_size) {
  CommWorkloadConfig config;
  config.world_size = world_size;
  config.max_delay_ms = 1.0;
  return config;
}

TEST(CommCollect, SpawnTwoRanksOnLoopback) {
  TempDir dir;
  std::string out = dir.path("w2");
  std::string err;
  ASSERT_EQ(run(spawn_args(out, 4), &err), 0) << err;
  EXPECT_NE(err.find("4 samples (4 new"), std::string::npos) << err;

  nlohmann::json meta = nlohmann::json::parse(read_text(out + "/meta.json"));
  EXPECT_EQ(meta["format"], kCostDataFormat);
  EXPECT_EQ(meta["kind"], "comm");
  EXPECT_EQ(meta["config"]["world_size"], 2);
  EXPECT_EQ(meta["config"]["batch_size"], 16);
  EXPECT_EQ(meta["config"]["backend"], "gloo");
  EXPECT_EQ(meta["config"]["seed"], 1);
  EXPECT_EQ(meta["config"]["repeats"], 5);  // each sample the per-rank median of five runs
  EXPECT_EQ(meta["device"], "cpu");
  EXPECT_EQ(meta["hosts"].size(), 2u);
  for (const char* key : {"cpu_model", "torch_version", "threads", "date", "command"}) {
    EXPECT_TRUE(meta.contains(key)) << key;
  }
  EXPECT_NE(meta["command"].get<std::string>().find("--spawn"), std::string::npos);

  std::vector<CommSample> samples = samples_in(out);
  ASSERT_EQ(samples.size(), 4u);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const CommSample& s = samples[i];
    CommWorkload expected = draw_comm_workload(default_workload(2), 1, static_cast<int64_t>(i));
    EXPECT_EQ(s.world_size, 2);
    EXPECT_EQ(s.dim_sums, expected.dim_sums) << "sample " << i;
    for (int r = 0; r < 2; ++r) {
      EXPECT_GT(s.fw_ms[static_cast<std::size_t>(r)], 0.0);
      EXPECT_GT(s.bw_ms[static_cast<std::size_t>(r)], 0.0);
      // The measured delay is at least the drawn one (sleep never returns early).
      EXPECT_GE(s.delays_ms[static_cast<std::size_t>(r)] + 1e-3, expected.delays_ms[static_cast<std::size_t>(r)]);
    }
  }
  // The trainer's loader reads the directory back.
  EXPECT_EQ(load_cost_data(out, CostKind::kComm).comm.size(), 4u);
}

TEST(CommCollect, ResumeContinuesTheSameSequence) {
  TempDir dir;
  std::string out = dir.path("w2");
  std::string err;
  ASSERT_EQ(run(spawn_args(out, 2), &err), 0) << err;
  std::vector<std::string> first = read_lines(out + "/samples.jsonl");
  ASSERT_EQ(first.size(), 2u);
  {
    // A torn line, as a crash in the middle of a write leaves it: resume cuts it off.
    std::FILE* file = std::fopen((out + "/samples.jsonl").c_str(), "a");
    std::fputs("{\"world_size\":2,\"dim_s", file);
    std::fclose(file);
  }
  ASSERT_EQ(run(spawn_args(out, 4), &err), 0) << err;
  EXPECT_NE(err.find("resuming after 2 samples"), std::string::npos) << err;
  std::vector<std::string> lines = read_lines(out + "/samples.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], first[0]);
  EXPECT_EQ(lines[1], first[1]);
  std::vector<CommSample> samples = samples_in(out);
  for (int64_t i = 2; i < 4; ++i) {
    EXPECT_EQ(samples[static_cast<std::size_t>(i)].dim_sums, draw_comm_workload(default_workload(2), 1, i).dim_sums);
  }

  // Nothing left to do.
  ASSERT_EQ(run(spawn_args(out, 3), &err), 0) << err;
  EXPECT_NE(err.find("nothing to do"), std::string::npos) << err;
  EXPECT_EQ(read_lines(out + "/samples.jsonl").size(), 4u);

  // Different settings never mix into one directory.
  EXPECT_EQ(run(spawn_args(out, 6, {"--seed", "2"}), &err), 2);
  EXPECT_NE(err.find("--out: " + out + "/meta.json: describes a different collection"), std::string::npos) << err;
  EXPECT_EQ(read_lines(out + "/samples.jsonl").size(), 4u);
}

// Ctrl-C (SIGINT) and SIGTERM both stop after the current sample, keeping only complete ones.
class CommCollectInterrupt : public ::testing::TestWithParam<int> {};

TEST_P(CommCollectInterrupt, KeepsOnlyCompleteSamples) {
  TempDir dir;
  std::string out = dir.path("w2");
  Process process(spawn_args(out, 1000000));
  ASSERT_TRUE(wait_for_samples(out, 3, process)) << process.err();
  process.signal(GetParam());
  auto code = process.wait_for(kRunLimit);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << process.err();
  EXPECT_NE(process.err().find("interrupted, re-run to resume"), std::string::npos) << process.err();
  std::string content = read_text(out + "/samples.jsonl");
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content.back(), '\n');
  std::vector<CommSample> samples = samples_in(out);  // every line parses
  EXPECT_GE(samples.size(), 3u);
  EXPECT_LT(samples.size(), 1000000u);
}

INSTANTIATE_TEST_SUITE_P(Signals, CommCollectInterrupt, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param == SIGINT ? std::string("sigint") : std::string("sigterm");
                         });

TEST(CommCollect, MissingPeerFailsWithinTheTimeout) {
  TempDir dir;
  const int port = find_free_port("127.0.0.1");
  auto start = std::chrono::steady_clock::now();
  Process rank0(
      {"collect-costs", "comm", "--samples", "3", "--out", dir.path("w2"), "--timeout", "2"},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}});
  auto code = rank0.wait_for(60s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(code.has_value()) << "rank 0 waited for a missing peer for over a minute";
  EXPECT_EQ(*code, 1) << rank0.err();
  EXPECT_LE(seconds, 2 + 10 + 5) << "documented bound: --timeout + 10 s (plus start-up)";
  EXPECT_NE(rank0.err().find("rendezvous"), std::string::npos) << rank0.err();
  EXPECT_NE(rank0.err().find("timeout of 2 s"), std::string::npos) << rank0.err();
}

TEST(CommCollect, PeerDeathFailsTheOtherRankQuickly) {
  TempDir dir;
  std::string out = dir.path("w2");
  const std::string port = std::to_string(find_free_port("127.0.0.1"));
  std::vector<std::string> args{"collect-costs", "comm", "--samples", "1000000", "--out", out,
                                "--batch-size",  "16",   "--timeout", "5"};
  Process rank0(args, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
  Process rank1(args, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
  ASSERT_TRUE(wait_for_samples(out, 2, rank0)) << rank0.err() << rank1.err();
  rank1.signal(SIGKILL);
  auto code = rank0.wait_for(5s + 10s + 5s);
  ASSERT_TRUE(code.has_value()) << "rank 0 outlived its peer by more than --timeout + 10 s";
  EXPECT_EQ(*code, 1) << rank0.err();
  EXPECT_NE(rank0.err().find("rank 0:"), std::string::npos) << rank0.err();
  EXPECT_NE(rank0.err().find("peer died"), std::string::npos) << rank0.err();
  EXPECT_NO_THROW(samples_in(out));
}

// torchrun's agent holds MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True): rank 0 serves the collector's
// store on the next port instead of failing to bind, as every torchrun launch did before.
TEST(CommCollect, UnderTorchrunTheStoreTakesTheNextPort) {
  TempDir dir;
  const std::string out = dir.path("w2");
  int agent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(agent, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(agent, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(agent, 4), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(agent, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  std::vector<std::string> args{"collect-costs", "comm", "--samples", "2", "--out", out,
                                "--batch-size",  "16",   "--timeout", "20"};
  auto env = [&](const char* rank) {
    return std::map<std::string, std::string>{{"RANK", rank},
                                              {"WORLD_SIZE", "2"},
                                              {"MASTER_ADDR", "127.0.0.1"},
                                              {"MASTER_PORT", port},
                                              {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  };
  Process rank0(args, env("0"));
  Process rank1(args, env("1"));
  auto code0 = rank0.wait_for(60s);
  auto code1 = rank1.wait_for(10s);
  ::close(agent);
  ASSERT_TRUE(code0.has_value() && code1.has_value()) << rank0.err() << rank1.err();
  EXPECT_EQ(*code0, 0) << rank0.err();
  EXPECT_EQ(*code1, 0) << rank1.err();
  EXPECT_EQ(samples_in(out).size(), 2u);
}

TEST(CommCollect, SpawnFailsWhenARankDies) {
  TempDir dir;
  std::string out = dir.path("w2");
  Process process(spawn_args(out, 1000000, {"--timeout", "5"}));
  ASSERT_TRUE(wait_for_samples(out, 1, process)) << process.err();
  // Rank 1 is the parent's second child; children of the parent are the ranks.
  std::string children =
      read_text("/proc/" + std::to_string(process.pid()) + "/task/" + std::to_string(process.pid()) + "/children");
  std::istringstream pids(children);
  std::vector<pid_t> ranks;
  for (pid_t pid = 0; pids >> pid;) ranks.push_back(pid);
  ASSERT_EQ(ranks.size(), 2u) << children;
  ::kill(ranks[1], SIGKILL);
  auto code = process.wait_for(30s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1) << process.err();
  EXPECT_NE(process.err().find("was killed by signal 9"), std::string::npos) << process.err();
}

// calibrate has no --spawn: a job's missing variable says how to calibrate this host alone instead.
TEST(CommCollect, ACalibrationJobNamesTheMissingVariableAndTheWayWithoutOne) {
  TempDir dir;
  std::string err;
  EXPECT_EQ(run({"calibrate", "--out", dir.path("m")}, &err, {{"WORLD_SIZE", "2"}}), 2);
  EXPECT_NE(err.find("RANK is not set"), std::string::npos) << err;
  EXPECT_NE(err.find("leave WORLD_SIZE unset"), std::string::npos) << err;
  EXPECT_EQ(err.find("--spawn"), std::string::npos) << err;
}

TEST(CommCollect, WithoutSpawnTheLauncherVariablesAreRequired) {
  TempDir dir;
  std::vector<std::string> args{"collect-costs", "comm", "--samples", "3", "--out", dir.path("w2")};
  std::string err;
  EXPECT_EQ(run(args, &err), 2);
  EXPECT_NE(err.find("WORLD_SIZE"), std::string::npos) << err;
  EXPECT_NE(err.find("--spawn"), std::string::npos) << err;
  EXPECT_EQ(run(args, &err, {{"WORLD_SIZE", "2"}}), 2);
  EXPECT_NE(err.find("RANK is not set"), std::string::npos) << err;
  EXPECT_EQ(run(args, &err, {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "29500"}}), 2);
  EXPECT_NE(err.find("MASTER_ADDR"), std::string::npos) << err;
  EXPECT_EQ(run(args, &err, {{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "x"}, {"MASTER_PORT", "1"}}), 2);
  EXPECT_NE(err.find("RANK: must be an integer in [0, 1], got '2'"), std::string::npos) << err;
  EXPECT_EQ(run(args, &err, {{"WORLD_SIZE", "two"}}), 2);
  EXPECT_NE(err.find("WORLD_SIZE: must be an integer"), std::string::npos) << err;
  std::vector<std::string> with_flag = args;
  with_flag.insert(with_flag.end(), {"--world-size", "4"});
  EXPECT_EQ(run(with_flag, &err, {{"WORLD_SIZE", "2"}, {"RANK", "0"}}), 2);
  EXPECT_NE(err.find("--world-size 4 disagrees"), std::string::npos) << err;
}

TEST(CommCollect, BadOptionsAreRejectedBeforeAnyRankStarts) {
  TempDir dir;
  const std::string out = dir.path("w2");
  struct Case {
    std::vector<std::string> extra;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--world-size", "1"}, "--world-size"},
      {{"--batch-size", "15"}, "--batch-size: must be a multiple of the world size 2"},
      {{"--batch-size", "0"}, "--batch-size"},
      {{"--backend", "mpi"}, "--backend: must be gloo, nccl or auto, got 'mpi'"},
      {{"--timeout", "0"}, "--timeout"},
      {{"--max-delay", "-2"}, "--max-delay"},
      {{"--samples", "0"}, "--samples: must be at least 1, got 0"},
      {{"--repeats", "0"}, "--repeats: must be in [1, 1000], got 0"},
      {{"--world-size", "abc"}, "--world-size"},
      {{"--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_EQ(run(spawn_args(out, 3, c.extra), &err), 2) << c.expected;
    EXPECT_NE(err.find(c.expected), std::string::npos) << err;
  }
  std::string err;
  EXPECT_EQ(run({"collect-costs", "comm", "--spawn", "--samples", "3", "--out", out}, &err), 2);
  EXPECT_NE(err.find("--world-size: required with --spawn"), std::string::npos) << err;
  EXPECT_EQ(run({"collect-costs", "comm", "--world-size", "2", "--spawn", "--samples", "3"}, &err), 2);
  EXPECT_NE(err.find("--out"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a rejected command created its output";
}

// --workloads: the given widths are timed, in order, instead of drawn ones; the file is checked first.
TEST(CommCollect, GivenWorkloadsAreTimedInOrder) {
  TempDir dir;
  std::vector<CommWorkload> given(3);
  given[0].dim_sums = {40, 8};
  given[0].delays_ms = {0.0, 2.0};
  given[1].dim_sums = {4, 4};
  given[1].delays_ms = {0.0, 0.0};
  given[2].dim_sums = {0, 128};
  given[2].delays_ms = {1.0, 0.0};
  const std::string file = dir.path("workloads.json");
  write_comm_workloads(file, 2, given);
  const std::string out = dir.path("timed");
  const std::vector<std::string> args{
      "collect-costs", "comm", "--world-size", "2", "--spawn", "--workloads", file, "--out", out,
      "--batch-size",  "16",   "--repeats",    "3"};
  std::string err;
  ASSERT_EQ(run(args, &err), 0) << err;
  std::vector<CommSample> samples = samples_in(out);
  ASSERT_EQ(samples.size(), 3u);  // every workload when --samples is not given
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(samples[i].dim_sums, given[i].dim_sums);
    for (std::size_t r = 0; r < 2; ++r) EXPECT_GE(samples[i].delays_ms[r] + 1e-3, given[i].delays_ms[r]);
  }
  nlohmann::json meta = nlohmann::json::parse(read_text(out + "/meta.json"));
  EXPECT_EQ(meta["config"]["workload"], "given");
  EXPECT_EQ(meta["config"]["workloads_digest"], fmt::format("{:016x}", comm_workloads_digest(given)));
  EXPECT_EQ(meta["workloads_file"], file);

  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"collect-costs", "comm", "--world-size", "4", "--spawn", "--workloads", file, "--out", dir.path("a")},
       "world_size: must be the collection's world size 4, got 2"},
      {{"collect-costs", "comm", "--world-size", "2", "--spawn", "--workloads", file, "--samples", "4", "--out",
        dir.path("b")},
       "--samples: must not exceed the 3 workloads"},
      {{"collect-costs", "comm", "--world-size", "2", "--spawn", "--workloads", dir.path("none.json"), "--out",
        dir.path("c")},
       "none.json"},
      {{"collect-costs", "comm", "--world-size", "2", "--spawn", "--out", dir.path("d")},
       "--samples: required (or give --workloads)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(run(c.args, &err), 2) << c.expected;
    EXPECT_NE(err.find(c.expected), std::string::npos) << err;
  }
}

// A plan's row-wise reduce-scatter and all-gather ride in fw and bw; its all-reduce is timed on its own.
TEST(CommCollect, GivenPlanCollectivesAreTimed) {
  TempDir dir;
  std::vector<CommWorkload> given(2);
  given[0].dim_sums = {40, 8};
  given[0].delays_ms = {0.0, 1.0};
  given[0].rw_dim = 24;
  given[0].allreduce_floats = 100000;
  given[1].dim_sums = {4, 4};
  given[1].delays_ms = {0.0, 0.0};
  const std::string file = dir.path("workloads.json");
  write_comm_workloads(file, 2, given);
  const std::string out = dir.path("timed");
  std::string err;
  ASSERT_EQ(run({"collect-costs", "comm", "--world-size", "2", "--spawn", "--workloads", file, "--out", out,
                 "--batch-size", "16", "--repeats", "2"},
                &err),
            0)
      << err;
  std::vector<CommSample> samples = samples_in(out);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].rw_dim, 24);
  EXPECT_EQ(samples[0].allreduce_floats, 100000);
  ASSERT_EQ(samples[0].allreduce_ms.size(), 2u);
  for (double ms : samples[0].allreduce_ms) EXPECT_GT(ms, 0.0);
  EXPECT_EQ(samples[1].rw_dim, 0);
  EXPECT_TRUE(samples[1].allreduce_ms.empty());
}

// A plan's table-row-wise tables reduce-scatter and all-gather within their host (hosts of --gpus-per-host
// ranks, each its own process group); a host without any joins nothing. The file is checked first.
TEST(CommCollect, GivenTableRowWiseCollectivesRunWithinEachHost) {
  TempDir dir;
  std::vector<CommWorkload> given(2);
  given[0].dim_sums = {8, 8, 4, 4};
  given[0].delays_ms = {0.0, 0.5, 0.0, 0.0};
  given[0].host_rw_dims = {16, 16, 0, 0};
  given[1].dim_sums = {8, 8, 4, 4};
  given[1].delays_ms = {0.0, 0.0, 0.0, 0.0};
  const std::string file = dir.path("workloads.json");
  write_comm_workloads(file, 4, given);
  const std::string out = dir.path("timed");
  std::string err;
  ASSERT_EQ(run({"collect-costs", "comm", "--world-size", "4", "--spawn", "--workloads", file, "--out", out,
                 "--gpus-per-host", "2", "--batch-size", "16", "--repeats", "2"},
                &err),
            0)
      << err;
  std::vector<CommSample> samples = samples_in(out);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].host_rw_dims, given[0].host_rw_dims);
  EXPECT_EQ(model_dim_sums(samples[0]), (std::vector<int64_t>{24, 24, 4, 4}));
  EXPECT_TRUE(samples[1].host_rw_dims.empty());

  EXPECT_EQ(run({"collect-costs", "comm", "--world-size", "4", "--spawn", "--workloads", file, "--out", dir.path("a"),
                 "--batch-size", "16"},
                &err),
            2);
  EXPECT_NE(err.find("--gpus-per-host: workloads with host_rw_dims need hosts of at least 2 ranks"), std::string::npos)
      << err;
  given[0].host_rw_dims = {16, 12, 0, 0};
  write_comm_workloads(file, 4, given);
  EXPECT_EQ(run({"collect-costs", "comm", "--world-size", "4", "--spawn", "--workloads", file, "--out", dir.path("b"),
                 "--gpus-per-host", "2", "--batch-size", "16"},
                &err),
            2);
  EXPECT_NE(err.find("workloads[0].host_rw_dims[1]: must be its host's value 16 (hosts of 2 ranks), got 12"),
            std::string::npos)
      << err;
}

// bench --measure-comm: the measured plans' all-to-alls are timed on 4 spawned ranks and added to their
// measured compute. Small batches keep it quick; only the bookkeeping is checked, not the timings.
TEST(BenchMeasureComm, StepIsComputePlusTimedAllToAlls) {
  Process process({"bench", "--tasks", std::string(SHARDPLAN_SOURCE_DIR) + "/data/tasks/paper-4gpu.json", "--algos",
                   "dim_greedy,size_greedy", "--measure", "1", "--measure-rounds", "1", "--measure-batch-size", "64",
                   "--measure-comm", "--measure-comm-batch-size", "16", "--measure-comm-repeats", "2", "--json",
                   "--per-task", "-q"});
  auto code = process.wait_for(kRunLimit);
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << process.err();
  nlohmann::json doc = nlohmann::json::parse(process.out());
  EXPECT_EQ(doc["step_measured_tasks"], 1);
  for (const char* name : {"dim_greedy", "size_greedy"}) {
    const auto& measured = doc["algorithms"][name]["measured"];
    EXPECT_EQ(measured["step_tasks"], 1) << name;
    EXPECT_GT(measured["task_max_step_ms"][0].get<double>(), measured["task_max_compute_ms"][0].get<double>()) << name;
    EXPECT_TRUE(measured["task_max_step_ms"][1].is_null()) << name;
  }

  std::string err;
  EXPECT_EQ(
      run({"bench", "--tasks", std::string(SHARDPLAN_SOURCE_DIR) + "/data/tasks/paper-4gpu.json", "--measure-comm"},
          &err),
      2);
  EXPECT_NE(err.find("--measure-comm: needs --measure"), std::string::npos) << err;
}

TEST(EvaluateMeasureComm, EveryDeviceGetsItsMeasuredStep) {
  TempDir dir;
  const std::string tables = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/fixtures/tables_small.json";
  const std::string plan = dir.path("plan.json");
  std::string err;
  ASSERT_EQ(run({"--tables", tables, "--gpus", "2", "-q", "-o", plan}, &err), 0) << err;
  Process process({"evaluate", "--plan", plan, "--tables", tables, "--measure", "--measure-rounds", "1",
                   "--measure-batch-size", "64", "--measure-comm", "--measure-comm-batch-size", "16",
                   "--measure-comm-repeats", "2", "--measure-comm-rounds", "2", "--json", "-q"});
  auto code = process.wait_for(kRunLimit);
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << process.err();
  nlohmann::json doc = nlohmann::json::parse(process.out());
  double slowest = 0.0;
  for (const auto& device : doc["devices"]) {
    const double total = device["measured_total_ms"].get<double>();
    EXPECT_DOUBLE_EQ(total, device["measured_compute_ms"].get<double>() + device["measured_fw_comm_ms"].get<double>() +
                                device["measured_bw_comm_ms"].get<double>());
    EXPECT_GT(device["measured_bw_comm_ms"].get<double>(), 0.0);
    slowest = std::max(slowest, total);
  }
  EXPECT_DOUBLE_EQ(doc["measured"]["max_total_ms"].get<double>(), slowest);
  EXPECT_EQ(run({"evaluate", "--plan", plan, "--tables", tables, "--measure", "--measure-comm-rounds", "0"}, &err), 2);
  EXPECT_NE(err.find("--measure-comm-rounds: must be in [1, 1000], got 0"), std::string::npos) << err;
}

TEST(CommCollect, NcclIsRefusedClearlyWithoutItOrWithoutAGpu) {
  TempDir dir;
  std::string err;
  const std::vector<std::string> built = compiled_comm_backends();
  const bool has_nccl = std::find(built.begin(), built.end(), "nccl") != built.end();
  int code = run(spawn_args(dir.path("w2"), 3, {"--backend", "nccl"}), &err);
  if (!has_nccl) {
    // Debian's CPU LibTorch: the refusal says how to get a build with it.
    EXPECT_EQ(code, 2);
    EXPECT_NE(err.find("--backend: nccl: this build has no NCCL collector"), std::string::npos) << err;
    EXPECT_NE(err.find("nccl.h"), std::string::npos) << err;
  } else if (code != 0) {
    EXPECT_EQ(code, 2);
    EXPECT_NE(err.find("--backend: nccl requested but no CUDA device is visible"), std::string::npos) << err;
  }
}

TEST(CommCollect, VersionNamesTheCollectorsBuilt) {
  Process process({"--version"}, {});
  ASSERT_EQ(process.wait_for(kRunLimit).value_or(-1), 0);
  const std::vector<std::string> built = compiled_comm_backends();
  const std::string want = built.empty() ? "none" : built.front();
  EXPECT_NE(process.out().find("all-to-all collectors: " + want), std::string::npos) << process.out();
}

}  // namespace
}  // namespace shardplan
