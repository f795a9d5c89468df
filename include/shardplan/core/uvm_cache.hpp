#pragma once
// TorchRec's fused_uvm_caching kernel as memory sees it: a table's weights live in the host's DDR (UVM) and
// an HBM cache of a share of its rows (the load factor) serves the lookups that hit. The figures follow
// FBGEMM's buffers (docs/design/uvm-caching.md 3.1-3.2), not TorchRec's storage estimate, which counts
// rowwise state in DDR and ignores the 32-way rounding.
#include <cstdint>
#include <string>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"

namespace shardplan {

// FBGEMM's cache is 32-way set-associative (DEFAULT_ASSOC, a warp).
inline constexpr int64_t kUvmCacheWays = 32;

// Slots FBGEMM gives a cache of `rows` at `load_factor`: 32 x max(1, ceil(floor(rows x load_factor) / 32)).
int64_t uvm_cache_slots(int64_t rows, double load_factor);

// Where a piece's bytes live.
struct PieceMemory {
  int64_t hbm = 0;
  int64_t ddr = 0;
};

// A cached piece of `rows` x `cols`: in HBM the cache's rows, 16 bytes of LRU state per slot, the 4-byte
// row-to-table map and rowwise adagrad's state (FBGEMM keeps rowwise state on the device); in DDR the
// weights and any element-wise optimizer state (Adagrad's, Adam's: UVM, never cached).
PieceMemory cached_piece_memory(int64_t rows, int64_t cols, DType dtype, Optimizer optimizer, double load_factor);

// Load factors a plan may give a cache: strictly between 0 and 1, as TorchRec's validate_compute_kernels
// requires (1 would be the fused kernel with extra work).
inline bool valid_load_factor(double load_factor) { return load_factor > 0.0 && load_factor < 1.0; }

// Why a plan may not give a cached piece of `rows` rows `load_factor`, or "" when it may: a valid load
// factor that caches at least one of FBGEMM's 32-way sets (floor(rows x load factor) >= 32; below it FBGEMM
// makes a cache of 32 rows, not the one the plan says).
std::string load_factor_problem(double load_factor, int64_t rows);

}  // namespace shardplan
