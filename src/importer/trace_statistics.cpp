#include "shardplan/importer/trace_statistics.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/reuse_hist.hpp"

namespace shardplan {

Table table_statistics(std::vector<int64_t>& ids, int64_t table, int64_t first_index, int64_t batch, int dim,
                       const std::string& source) {
  int64_t max_id = -1;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) {
      throw InputError(fmt::format("{}: indices[{}] (table {}) is {}: ids must not be negative", source,
                                   first_index + static_cast<int64_t>(i), table, ids[i]));
    }
    max_id = std::max(max_id, ids[i]);
  }
  if (max_id >= kMaxRows) {
    throw InputError(
        fmt::format("{}: table {} has id {}, beyond the {} rows a table may have", source, table, max_id, kMaxRows));
  }
  // Sorting in place keeps the working set at the ids themselves; a hash map of counts would need
  // several times more for the tables with millions of distinct ids.
  std::sort(ids.begin(), ids.end());
  ReuseHistBuilder builder;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    builder.add_row(static_cast<int64_t>(j - i));
    i = j;
  }
  Table out;
  out.name = fmt::format("t{}", table);
  out.rows = std::max(max_id + 1, kDlrmMinRows);
  out.dim = dim;
  out.pooling_factor = static_cast<double>(ids.size()) / static_cast<double>(batch);
  out.reuse_hist = builder.finish();
  spdlog::debug("{}: {}: {} ids, {} distinct, rows {}, pooling factor {:.3f}", source, out.name, ids.size(),
                builder.distinct_rows(), out.rows, out.pooling_factor);
  return out;
}

}  // namespace shardplan
