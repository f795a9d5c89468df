#include <gtest/gtest.h>

#include <algorithm>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/costs/compute_collector.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;

Table table(const std::string& name, int64_t rows, int dim, double pf) {
  Table t;
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.pooling_factor = pf;
  return t;
}

ComputeBenchConfig small_bench() {
  ComputeBenchConfig bench;
  bench.batch_size = 512;
  bench.warmup_iterations = 1;
  bench.timed_iterations = 3;
  return bench;
}

TEST(ComputeBenchmark, TimesArePositive) {
  ComputeTiming timing = measure_compute_step({table("a", 1000, 16, 4), table("b", 500, 32, 2)}, small_bench(), 1);
  ASSERT_EQ(timing.iterations_ms.size(), 3u);
  for (double ms : timing.iterations_ms) EXPECT_GT(ms, 0.0);
  EXPECT_GT(timing.median_ms, 0.0);
}

TEST(ComputeBenchmark, MorePoolingCostsMore) {
  // Sixteen times the lookups of a large table. Other work on the machine only adds time, so each side
  // keeps its fastest step over three interleaved rounds: with medians, a build running beside the test
  // once made the light side slower than the heavy one.
  ComputeBenchConfig bench;
  bench.batch_size = 2048;
  bench.warmup_iterations = 1;
  bench.timed_iterations = 5;
  double light = 1e300, heavy = 1e300;
  for (int round = 0; round < 3; ++round) {
    for (double ms : measure_compute_step({table("big", 400'000, 64, 4)}, bench, 3).iterations_ms)
      light = std::min(light, ms);
    for (double ms : measure_compute_step({table("big", 400'000, 64, 64)}, bench, 3).iterations_ms)
      heavy = std::min(heavy, ms);
  }
  EXPECT_GT(heavy, light * 1.1) << "pf 4: " << light << " ms, pf 64: " << heavy << " ms (fastest steps)";
}

TEST(ComputeCollector, DrawsAugmentedWidthsWithinTheMemoryCap) {
  std::vector<Table> pool = {table("a", 1000, 64, 2), table("b", 2'000'000, 64, 20), table("c", 50, 64, 1)};
  const int64_t cap = 64ll << 20;
  for (int64_t i = 0; i < 50; ++i) {
    auto shards = draw_compute_sample(pool, 8, cap, 9, i);
    ASSERT_FALSE(shards.empty());
    ASSERT_LE(shards.size(), 8u);
    int64_t bytes = 0;
    for (const auto& s : shards) {
      EXPECT_EQ(s.dim % 4, 0);
      EXPECT_GE(s.dim, 4);
      EXPECT_LE(s.dim, 128);
      bytes += shard_memory_bytes(s.rows, s.dim, DType::kFp32, Optimizer::kSgd);
    }
    EXPECT_LE(bytes, cap);
    auto again = draw_compute_sample(pool, 8, cap, 9, i);
    ASSERT_EQ(again.size(), shards.size());
    for (std::size_t k = 0; k < shards.size(); ++k) {
      EXPECT_EQ(again[k].name, shards[k].name);
      EXPECT_EQ(again[k].dim, shards[k].dim);
    }
  }
}

TEST(ComputeBenchmark, NamesTheFirstGpuByBusIdFromNvidiasDriverFolder) {
  fs::path root = fs::temp_directory_path() / ("shardplan-gpus-" + std::to_string(::getpid()));
  fs::remove_all(root);
  EXPECT_EQ(nvidia_gpu_model(root.string()), "");  // no driver: no name, and no error
  auto write_gpu = [&](const std::string& bus, const std::string& model) {
    fs::create_directories(root / bus);
    std::ofstream(root / bus / "information") << "Model: \t\t " << model << "\nIRQ:   \t\t 41\n";
  };
  write_gpu("0000:00:07.0", "NVIDIA A100-SXM4-80GB");
  write_gpu("0000:00:06.0", "NVIDIA H100 80GB HBM3");  // the lower bus id: cuda:0 in the default order
  EXPECT_EQ(nvidia_gpu_model(root.string()), "NVIDIA H100 80GB HBM3");
  fs::remove_all(root);
}

TEST(ComputeCollector, CollectsResumesAndRecordsProvenance) {
  fs::path dir = fs::temp_directory_path() / ("shardplan-collect-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<Table> pool = {table("a", 1000, 64, 2), table("b", 20'000, 64, 5), table("c", 300, 64, 1)};
  ComputeCollectConfig config;
  config.pool_path = "pool.json";
  config.out_dir = dir.string();
  config.samples = 3;
  config.max_tables = 4;
  config.seed = 5;
  config.bench = small_bench();
  config.torch_version = torch_version();
  config.quiet = true;
  CollectSummary first = collect_compute_costs(pool, config, compute_timer(config.bench));
  EXPECT_EQ(first.existing, 0);
  EXPECT_EQ(first.written, 3);
  CostData after_first = load_cost_data(dir.string(), CostKind::kCompute);
  ASSERT_EQ(after_first.compute.size(), 3u);

  config.samples = 5;
  CollectSummary second = collect_compute_costs(pool, config, compute_timer(config.bench));
  EXPECT_EQ(second.existing, 3);
  EXPECT_EQ(second.written, 2);
  CostData data = load_cost_data(dir.string(), CostKind::kCompute);
  ASSERT_EQ(data.compute.size(), 5u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(data.compute[i].latency_ms, after_first.compute[i].latency_ms);
  for (const auto& sample : data.compute) {
    EXPECT_GT(sample.latency_ms, 0.0);
    EXPECT_EQ(sample.iterations_ms.size(), 3u);
    EXPECT_EQ(sample.shards.size(),
              draw_compute_sample(pool, 4, config.memory_cap_bytes, 5, &sample - &data.compute[0]).size());
  }
  for (const char* key : {"device", "cpu_model", "threads", "torch_version", "batch_size", "seed", "date", "host"}) {
    EXPECT_TRUE(data.meta.contains(key)) << key;
  }
  EXPECT_EQ(data.meta["torch_version"], torch_version());

  config.bench.batch_size = 1024;  // a different collection cannot be appended
  try {
    collect_compute_costs(pool, config, compute_timer(config.bench));
    ADD_FAILURE() << "a different collection was appended";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "cost-data directory");
    EXPECT_NE(e.rule().find("describes a different collection"), std::string::npos) << e.rule();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardplan
