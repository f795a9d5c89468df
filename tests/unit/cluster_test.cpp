#include <gtest/gtest.h>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan {
namespace {

TEST(Cluster, ShardMemoryCountsWeightsAndOptimizerState) {
  const int64_t rows = 1000;
  const int64_t cols = 64;
  EXPECT_EQ(shard_memory_bytes(rows, cols, DType::kFp32, Optimizer::kSgd), rows * cols * 4);
  EXPECT_EQ(shard_memory_bytes(rows, cols, DType::kFp16, Optimizer::kSgd), rows * cols * 2);
  EXPECT_EQ(shard_memory_bytes(rows, cols, DType::kFp32, Optimizer::kRowwiseAdagrad), rows * cols * 4 + rows * 4);
  EXPECT_EQ(shard_memory_bytes(rows, cols, DType::kFp32, Optimizer::kAdagrad), rows * cols * 8);
  EXPECT_EQ(shard_memory_bytes(rows, cols, DType::kFp16, Optimizer::kAdam), rows * cols * (2 + 8));
}

TEST(Cluster, LargestTablesDoNotOverflow) {
  EXPECT_EQ(shard_memory_bytes(kMaxRows, kMaxDim, DType::kFp32, Optimizer::kAdam), kMaxRows * kMaxDim * 12);
}

TEST(Cluster, ReserveShrinksUsableMemory) {
  Cluster c;
  c.num_devices = 4;
  c.memory_per_device_bytes = 1000;
  c.reserve_fraction = 0.15;
  EXPECT_EQ(c.usable_bytes_per_device(), 850);
}

TEST(Cluster, ValidationNamesTheFlag) {
  auto message = [](Cluster c) {
    try {
      validate_cluster(c);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  Cluster ok;
  ok.num_devices = 8;
  EXPECT_EQ(message(ok), "(valid)");
  Cluster c = ok;
  c.num_devices = 0;
  EXPECT_EQ(message(c), "GPUs: must be between 1 and 65536, got 0");
  c.num_devices = 1000000;
  EXPECT_EQ(message(c), "GPUs: must be between 1 and 65536, got 1000000");
  c = ok;
  c.reserve_fraction = 1.0;
  EXPECT_EQ(message(c), "reserve: must be in [0, 1), got 1");
  c = ok;
  c.devices_per_host = 0;
  EXPECT_EQ(message(c).rfind("GPUs per host: ", 0), 0u);
}

TEST(Cluster, OptimizerNamesRoundTrip) {
  for (auto o : {Optimizer::kSgd, Optimizer::kRowwiseAdagrad, Optimizer::kAdagrad, Optimizer::kAdam}) {
    EXPECT_EQ(parse_optimizer(optimizer_name(o)), o);
  }
  EXPECT_FALSE(parse_optimizer("lamb").has_value());
}

}  // namespace
}  // namespace shardplan
