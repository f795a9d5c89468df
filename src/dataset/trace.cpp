#include "shardplan/dataset/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/strict_fp.hpp"
#include "shardplan/cost_model/cache_model.hpp"

namespace shardplan {

namespace {

// Far above any batch that fits in memory (8 bytes an index); keeps every count inside int64.
constexpr double kMaxTraceLookups = 1e13;

// Independent sub-streams of the trace seed, one per decision, so each stays put when another changes.
enum Stream : uint64_t {
  kCountsStream = 1,
  kRowsStream = 2,
  kPlacementStream = 3,
  kLengthsStream = 4,
  // A sequence draws its rows from one stream, and batch t places them with sub-stream t of the other
  // two, so skipping a batch's trace (TraceSequence::next_rows) leaves every later batch as it is.
  kSequenceRowsStream = 5,
  kSequencePlacementStream = 6,
  kSequenceLengthsStream = 7,
};

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

void check_trace_request(const Table& table, int64_t batch_size) {
  if (batch_size < 1) {
    throw InputError(
        fmt::format("trace for table \"{}\": batch size must be at least 1, got {}", table.name, batch_size));
  }
  if (static_cast<double>(batch_size) * table.pooling_factor > kMaxTraceLookups) {
    throw InputError(fmt::format("trace for table \"{}\": {} samples x pooling factor {} is over {:.0e} lookups",
                                 table.name, batch_size, table.pooling_factor, kMaxTraceLookups));
  }
}

// A mixer for the open-addressing set of ids (SplitMix64's finaliser).
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

int64_t trace_lookups(const Table& table, int64_t batch_size) {
  return std::llround(static_cast<double>(batch_size) * table.pooling_factor);
}

BinPlan trace_bin_plan(const Table& table, int64_t batch_size) {
  return plan_bins(table.reuse_hist_or_default(), trace_lookups(table, batch_size), table.rows);
}

IndexTrace synthesize_trace(const Table& table, int64_t batch_size, uint64_t seed) {
  check_trace_request(table, batch_size);
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

TraceSequence::TraceSequence(const Table& table, int64_t batch_size, uint64_t seed, double persistence)
    : rows_(table.rows), batch_size_(batch_size), seed_(seed), rows_rng_(derive_seed(seed, kSequenceRowsStream)) {
  check_trace_request(table, batch_size);
  if (!(persistence >= 0.0 && persistence <= 1.0)) {
    throw InputError(
        fmt::format("trace for table \"{}\": persistence must be in [0, 1], got {}", table.name, persistence));
  }
  lookups_ = trace_lookups(table, batch_size);
  plan_ = trace_bin_plan(table, batch_size);
  Rng counts_rng(derive_seed(seed, kCountsStream));
  batch_.counts = draw_access_counts(plan_, lookups_, counts_rng);
  singletons_ = plan_.rows_per_bin[0];
  persistence_.reserve(batch_.counts.size());
  for (int b = 0; b < kReuseBins; ++b) {
    persistence_.insert(persistence_.end(), static_cast<std::size_t>(plan_.rows_per_bin[b]),
                        bin_persistence(b, persistence));
  }
  batch_.ids.assign(batch_.counts.size(), -1);
  std::size_t capacity = 16;
  while (capacity < 2 * batch_.ids.size() + 2) capacity *= 2;
  taken_.assign(capacity, -1);
}

bool TraceSequence::take(int64_t id) {
  const std::size_t mask = taken_.size() - 1;
  for (std::size_t at = static_cast<std::size_t>(mix(static_cast<uint64_t>(id))) & mask;; at = (at + 1) & mask) {
    if (taken_[at] == id) return false;
    if (taken_[at] < 0) {
      taken_[at] = id;
      return true;
    }
  }
}

const BatchRows& TraceSequence::next_rows() {
  Rng& rng = rows_rng_;
  std::fill(taken_.begin(), taken_.end(), -1);
  const std::size_t n = batch_.ids.size();
  const auto first_warm = static_cast<std::size_t>(singletons_);
  // Which warm rows stay (none in the first batch), then new ids for the others and for the singletons,
  // each uniform over the ids not taken yet.
  stays_.assign(n, 0);
  if (drawn_ > 0) {
    for (std::size_t i = first_warm; i < n; ++i) {
      stays_[i] = rng.uniform() < persistence_[i] ? 1 : 0;
      if (stays_[i] != 0) take(batch_.ids[i]);
    }
  }
  auto draw_free = [&] {
    for (;;) {
      auto id = static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows_)));
      if (take(id)) return id;
    }
  };
  for (std::size_t i = first_warm; i < n; ++i) {
    if (stays_[i] == 0) batch_.ids[i] = draw_free();
  }
  for (std::size_t i = 0; i < first_warm; ++i) batch_.ids[i] = draw_free();
  drawn_ += 1;
  return batch_;
}

IndexTrace TraceSequence::next_trace() {
  const auto t = static_cast<uint64_t>(drawn_);
  const BatchRows& rows = next_rows();
  IndexTrace trace;
  trace.indices.reserve(static_cast<std::size_t>(lookups_));
  for (std::size_t i = 0; i < rows.ids.size(); ++i) {
    trace.indices.insert(trace.indices.end(), static_cast<std::size_t>(rows.counts[i]), rows.ids[i]);
  }
  Rng placement_rng(derive_seed(derive_seed(seed_, kSequencePlacementStream), t));
  placement_rng.shuffle(trace.indices);
  Rng lengths_rng(derive_seed(derive_seed(seed_, kSequenceLengthsStream), t));
  trace.offsets = bag_offsets(batch_size_, lookups_, lengths_rng);
  return trace;
}

std::vector<IndexTrace> synthesize_trace_sequence(const Table& table, int64_t batch_size, int batches, uint64_t seed,
                                                  double persistence) {
  if (batches < 0) {
    throw InputError(
        fmt::format("trace sequence for table \"{}\": batches must be 0 or more, got {}", table.name, batches));
  }
  TraceSequence sequence(table, batch_size, seed, persistence);
  std::vector<IndexTrace> traces;
  traces.reserve(static_cast<std::size_t>(batches));
  for (int t = 0; t < batches; ++t) traces.push_back(sequence.next_trace());
  return traces;
}

}  // namespace shardplan
