#include "shardplan/core/uvm_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shardplan {

int64_t uvm_cache_slots(int64_t rows, double load_factor) {
  const double share = std::isfinite(load_factor) && load_factor > 0.0 ? load_factor : 0.0;
  const double wanted = std::floor(static_cast<double>(std::max<int64_t>(rows, 0)) * share);
  // int(H * clf) in FBGEMM; far beyond any real cache the cap only keeps the arithmetic in int64.
  constexpr double kCap = 1e15;
  const auto wanted_rows = static_cast<int64_t>(std::min(wanted, kCap));
  const int64_t sets = std::max<int64_t>(1, (wanted_rows + kUvmCacheWays - 1) / kUvmCacheWays);
  return sets * kUvmCacheWays;
}

std::string load_factor_problem(double load_factor, int64_t rows) {
  if (!valid_load_factor(load_factor)) return fmt::format("must lie strictly between 0 and 1, got {}", load_factor);
  const double cached = std::floor(static_cast<double>(rows) * load_factor);
  if (cached < static_cast<double>(kUvmCacheWays)) {
    return fmt::format("{} caches {:g} of a piece's {} rows, under one of FBGEMM's {}-way sets (it would cache {})",
                       load_factor, cached, rows, kUvmCacheWays, kUvmCacheWays);
  }
  return "";
}

PieceMemory cached_piece_memory(int64_t rows, int64_t cols, DType dtype, Optimizer optimizer, double load_factor) {
  constexpr int64_t kStateBytes = 4;       // optimizer state is fp32
  constexpr int64_t kSlotStateBytes = 16;  // lxu_cache_state and lru_state, 8 bytes each per slot
  constexpr int64_t kRowMapBytes = 4;      // cache_index_table_map, per row
  const int64_t slots = uvm_cache_slots(rows, load_factor);
  const int64_t element_bytes = dtype_bytes(dtype);
  PieceMemory memory;
  memory.hbm = slots * cols * element_bytes + slots * kSlotStateBytes + rows * kRowMapBytes;
  memory.ddr = rows * cols * element_bytes;
  switch (optimizer) {
    case Optimizer::kSgd:
      break;
    case Optimizer::kRowwiseAdagrad:
      memory.hbm += rows * kStateBytes;
      break;
    case Optimizer::kAdagrad:
      memory.ddr += rows * cols * kStateBytes;
      break;
    case Optimizer::kAdam:
      memory.ddr += 2 * rows * cols * kStateBytes;
      break;
  }
  return memory;
}

}  // namespace shardplan
