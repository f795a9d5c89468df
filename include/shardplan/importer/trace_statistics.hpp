#pragma once
// A table's figures from the ids its lookups read (an index trace, as a dlrm_datasets file holds one per
// table, torch/dlrm_import.hpp): its rows, pooling factor and reuse histogram. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// The fewest rows an imported table gets, however few its ids reach.
inline constexpr int64_t kDlrmMinRows = 100;

// Table number `table` (named t<table>, `dim` wide) from the ids of its lookups over `batch` samples:
//   rows           = max id + 1, but at least kDlrmMinRows,
//   pooling_factor = ids per sample,
//   reuse_hist     = the 17-bin histogram of reuse_hist.hpp over its distinct ids (all zeros for none).
// `ids` are sorted in place. Throws InputError naming `source`, the table and the id's place in the file
// (first_index + i) for a negative id or one beyond kMaxRows.
Table table_statistics(std::vector<int64_t>& ids, int64_t table, int64_t first_index, int64_t batch, int dim,
                       const std::string& source);

}  // namespace shardplan
