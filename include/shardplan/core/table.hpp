#pragma once
// An embedding table as the planner sees it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/sharding_type.hpp"

namespace shardplan {

// Reuse histogram bins: (0,1], (1,2], (2,4], ..., (16384,32768], (32768,inf) accesses per distinct row.
inline constexpr int kReuseBins = 17;
using ReuseHist = std::array<double, kReuseBins>;

// Aggregate histogram published with Meta's dlrm_datasets (method.md); used when a table has none.
inline constexpr ReuseHist kDlrmAggregateReuseHist = {0.069, 0.044, 0.068, 0.101, 0.121, 0.104, 0.073, 0.058, 0.052,
                                                      0.050, 0.049, 0.048, 0.048, 0.043, 0.031, 0.023, 0.019};

enum class DType { kFp32, kFp16 };

int dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);

// Limits that keep every size computation (rows x dim x bytes x state) inside int64.
inline constexpr int64_t kMaxRows = 1'000'000'000'000;  // 1e12
inline constexpr int kMaxDim = 65'536;
inline constexpr double kMaxPoolingFactor = 1e6;

// What a user allows one table, as TorchRec's ParameterConstraints and a pinned placement say it: the
// sharding types it may take (empty: whatever the plan allows) and the ranks its shards must lie on
// (ascending and distinct; empty: any). A pinned table is table- or column-wise: the other types span
// ranks fixed by the cluster.
struct TableConstraints {
  ShardingTypeSet sharding_types;
  std::vector<int> ranks;

  bool pinned() const { return !ranks.empty(); }
  bool allows_rank(int rank) const;
  bool any() const { return !sharding_types.empty() || pinned(); }
};

struct Table {
  std::string name;
  int64_t rows = 0;                     // hash size, number of embedding rows
  int dim = 0;                          // embedding width, a positive multiple of 4
  double pooling_factor = 1.0;          // mean lookups per sample
  std::optional<ReuseHist> reuse_hist;  // normalised to sum 1 (or all zero: no lookups seen)
  DType dtype = DType::kFp32;
  TableConstraints constraints;

  // The table's histogram, or the dlrm_datasets aggregate when it has none.
  const ReuseHist& reuse_hist_or_default() const;
};

}  // namespace shardplan
