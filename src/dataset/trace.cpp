#include "shardplan/dataset/trace.hpp"

#include <fmt/format.h>

#include <cmath>
#include <unordered_set>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/strict_fp.hpp"

namespace shardplan {

namespace {

// Far above any batch that fits in memory (8 bytes an index); keeps every count inside int64.
constexpr double kMaxTraceLookups = 1e13;

// Independent sub-streams of the trace seed, one per decision, so each stays put when another changes.
enum Stream : uint64_t { kCountsStream = 1, kRowsStream = 2, kPlacementStream = 3, kLengthsStream = 4 };

// `count` distinct ids from [0, rows), in random order.
std::vector<int64_t> sample_distinct_rows(int64_t rows, int64_t count, Rng& rng) {
  std::vector<int64_t> ids;
  ids.reserve(static_cast<std::size_t>(count));
  if (count * 2 >= rows) {
    // Dense: a partial Fisher-Yates shuffle of all ids.
    std::vector<int64_t> all(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) all[static_cast<std::size_t>(r)] = r;
    for (int64_t i = 0; i < count; ++i) {
      auto j = static_cast<std::size_t>(i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows - i))));
      std::swap(all[static_cast<std::size_t>(i)], all[j]);
      ids.push_back(all[static_cast<std::size_t>(i)]);
    }
    return ids;
  }
  // Sparse: Floyd's algorithm (count draws, no table of all rows); the set only answers membership, so
  // its platform-dependent iteration order never matters.
  std::unordered_set<int64_t> chosen;
  chosen.reserve(static_cast<std::size_t>(count) * 2);
  for (int64_t j = rows - count; j < rows; ++j) {
    auto t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    int64_t pick = chosen.insert(t).second ? t : j;
    if (pick == j) chosen.insert(j);
    ids.push_back(pick);
  }
  rng.shuffle(ids);  // Floyd's output order is not uniform (late picks favour high ids)
  return ids;
}

// Offsets of `batch_size` bags holding `lookups` indices in all. Each bag gets a share proportional to an
// exponential weight (lengths spread like a geometric law around the mean, empty bags included, as
// missing features make in real batches); cumulative rounding keeps the total exact.
std::vector<int64_t> bag_offsets(int64_t batch_size, int64_t lookups, Rng& rng) {
  const auto n = static_cast<std::size_t>(batch_size);
  std::vector<double> cumulative(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) cumulative[i + 1] = cumulative[i] + rng.exponential();
  std::vector<int64_t> offsets(n + 1, 0);
  const double total = cumulative[n];
  for (std::size_t i = 1; i <= n; ++i) {
    offsets[i] = std::llround(static_cast<double>(lookups) * (cumulative[i] / total));
  }
  offsets[n] = lookups;
  return offsets;
}

}  // namespace

int64_t trace_lookups(const Table& table, int64_t batch_size) {
  return std::llround(static_cast<double>(batch_size) * table.pooling_factor);
}

BinPlan trace_bin_plan(const Table& table, int64_t batch_size) {
  return plan_bins(table.reuse_hist_or_default(), trace_lookups(table, batch_size), table.rows);
}

IndexTrace synthesize_trace(const Table& table, int64_t batch_size, uint64_t seed) {
  if (batch_size < 1) {
    throw InputError(
        fmt::format("trace for table \"{}\": batch size must be at least 1, got {}", table.name, batch_size));
  }
  if (static_cast<double>(batch_size) * table.pooling_factor > kMaxTraceLookups) {
    throw InputError(fmt::format("trace for table \"{}\": {} samples x pooling factor {} is over {:.0e} lookups",
                                 table.name, batch_size, table.pooling_factor, kMaxTraceLookups));
  }
  const int64_t lookups = trace_lookups(table, batch_size);
  const BinPlan plan = trace_bin_plan(table, batch_size);

  Rng counts_rng(derive_seed(seed, kCountsStream));
  std::vector<int64_t> counts = draw_access_counts(plan, lookups, counts_rng);
  Rng rows_rng(derive_seed(seed, kRowsStream));
  std::vector<int64_t> ids = sample_distinct_rows(table.rows, plan.distinct, rows_rng);

  IndexTrace trace;
  trace.indices.reserve(static_cast<std::size_t>(lookups));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    trace.indices.insert(trace.indices.end(), static_cast<std::size_t>(counts[i]), ids[i]);
  }
  Rng placement_rng(derive_seed(seed, kPlacementStream));
  placement_rng.shuffle(trace.indices);
  Rng lengths_rng(derive_seed(seed, kLengthsStream));
  trace.offsets = bag_offsets(batch_size, lookups, lengths_rng);
  return trace;
}

}  // namespace shardplan
