// Multi-batch traces whose popular rows persist (dataset/trace.hpp's TraceSequence): every batch keeps the
// table's histogram, the rows that persist follow the cache model's assumption, seeds reproduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/reuse_hist.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {
namespace {

Table make_table(int64_t rows, double pooling_factor, std::optional<ReuseHist> hist = std::nullopt) {
  Table table;
  table.name = "t";
  table.rows = rows;
  table.dim = 64;
  table.pooling_factor = pooling_factor;
  table.reuse_hist = hist;
  return table;
}

const ReuseHist kCold = {0.55, 0.2, 0.12, 0.07, 0.04, 0.02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
const ReuseHist kHot = {0.01, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1,  0.12, 0.12,
                        0.1,  0.09, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02};

// Distinct ids of a trace, each with its lookups.
std::map<int64_t, int64_t> counts_of(const std::vector<int64_t>& indices) {
  std::map<int64_t, int64_t> counts;
  for (int64_t i : indices) counts[i] += 1;
  return counts;
}

TEST(DatasetTraceSequence, EveryBatchHasThePlansHistogram) {
  struct Case {
    Table table;
    int64_t batch;
  };
  for (const Case& c : {Case{make_table(2'000'000, 3.0, kCold), 8192}, Case{make_table(500'000, 25.0, kHot), 4096},
                        Case{make_table(10'000'000, 20.0), 16384}}) {
    const BinPlan plan = trace_bin_plan(c.table, c.batch);
    ASSERT_TRUE(plan.realisable);
    for (double sigma : {0.0, 0.5, 1.0}) {
      std::vector<IndexTrace> traces = synthesize_trace_sequence(c.table, c.batch, 6, 3, sigma);
      ASSERT_EQ(traces.size(), 6u);
      for (const IndexTrace& trace : traces) {
        EXPECT_EQ(static_cast<int64_t>(trace.indices.size()), trace_lookups(c.table, c.batch));
        ASSERT_EQ(static_cast<int64_t>(trace.offsets.size()), c.batch + 1);
        EXPECT_EQ(trace.offsets.front(), 0);
        EXPECT_EQ(trace.offsets.back(), static_cast<int64_t>(trace.indices.size()));
        EXPECT_TRUE(std::is_sorted(trace.offsets.begin(), trace.offsets.end()));
        auto [lo, hi] = std::minmax_element(trace.indices.begin(), trace.indices.end());
        EXPECT_GE(*lo, 0);
        EXPECT_LT(*hi, c.table.rows);
        EXPECT_EQ(reuse_histogram(trace.indices), plan.histogram()) << sigma;
      }
    }
  }
}

TEST(DatasetTraceSequence, SameSeedSameBatchesOtherSeedOthers) {
  const Table table = make_table(1'000'000, 4.0, kCold);
  std::vector<IndexTrace> a = synthesize_trace_sequence(table, 2048, 4, 11, 0.5);
  std::vector<IndexTrace> b = synthesize_trace_sequence(table, 2048, 4, 11, 0.5);
  std::vector<IndexTrace> c = synthesize_trace_sequence(table, 2048, 4, 12, 0.5);
  for (std::size_t t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a[t].indices, b[t].indices);
    EXPECT_EQ(a[t].offsets, b[t].offsets);
    EXPECT_NE(a[t].indices, c[t].indices);
  }
  EXPECT_NE(a[0].indices, a[1].indices);
  EXPECT_TRUE(synthesize_trace_sequence(table, 2048, 0, 11, 0.5).empty());
}

TEST(DatasetTraceSequence, RowsAreWhatTheTraceHolds) {
  // next_rows skips building the trace but leaves the sequence where next_trace would.
  const Table table = make_table(300'000, 6.0, kCold);
  std::vector<IndexTrace> traces = synthesize_trace_sequence(table, 4096, 5, 21, 1.0);
  TraceSequence sequence(table, 4096, 21, 1.0);
  for (const IndexTrace& trace : traces) {
    const BatchRows& rows = sequence.next_rows();
    ASSERT_EQ(rows.ids.size(), rows.counts.size());
    std::map<int64_t, int64_t> expected = counts_of(trace.indices);
    std::map<int64_t, int64_t> got;
    for (std::size_t i = 0; i < rows.ids.size(); ++i) got[rows.ids[i]] += rows.counts[i];
    EXPECT_EQ(got, expected);
    EXPECT_EQ(rows.ids.size(), expected.size());  // distinct
  }
  EXPECT_EQ(sequence.batches_drawn(), 5);
  EXPECT_EQ(sequence.lookups(), trace_lookups(table, 4096));
}

TEST(DatasetTraceSequence, WarmRowsPersistAsTheModelAssumes) {
  // A warm row of bin b keeps its id (and count) into the next batch with sigma (1 - e^(-c_b)); singletons
  // and replaced rows are drawn anew, so persistence 0 shares almost nothing between batches.
  const Table table = make_table(5'000'000, 2.0, kCold);
  const BinPlan plan = trace_bin_plan(table, 16384);
  for (double sigma : {0.0, 0.5, 1.0}) {
    TraceSequence sequence(table, 16384, 4, sigma);
    std::set<int64_t> previous;
    double kept = 0.0;
    double batches = 0.0;
    for (int t = 0; t < 20; ++t) {
      const BatchRows& rows = sequence.next_rows();
      std::set<int64_t> ids(rows.ids.begin(), rows.ids.end());
      if (t > 0) {
        for (int64_t id : ids) kept += previous.count(id);
        batches += 1.0;
      }
      previous = std::move(ids);
    }
    double expected = 0.0;
    for (int b = 1; b < kReuseBins; ++b)
      expected += static_cast<double>(plan.rows_per_bin[b]) * bin_persistence(b, sigma);
    const double d = static_cast<double>(plan.distinct);
    // Fresh draws land on last batch's rows with about D / R.
    expected += (d - expected) * d / static_cast<double>(table.rows);
    EXPECT_NEAR(kept / batches, expected, 0.05 * d + 3.0) << sigma;
  }
}

TEST(DatasetTraceSequence, RefusesBadSettings) {
  const Table table = make_table(1000, 2.0, kCold);
  EXPECT_THROW(TraceSequence(table, 64, 1, 1.5), InputError);
  EXPECT_THROW(TraceSequence(table, 64, 1, -0.1), InputError);
  EXPECT_THROW(TraceSequence(table, 64, 1, std::nan("")), InputError);
  EXPECT_THROW(TraceSequence(table, 0, 1, 0.5), InputError);
  EXPECT_THROW(synthesize_trace_sequence(table, 64, -1, 1, 0.5), InputError);
}

TEST(DatasetTraceSequence, ABatchCanTouchEveryRow) {
  // D = R: every row every batch, whatever persists.
  const Table table = make_table(64, 50.0, kCold);
  ASSERT_EQ(trace_bin_plan(table, 64).distinct, 64);
  TraceSequence sequence(table, 64, 2, 0.5);
  for (int t = 0; t < 3; ++t) {
    const BatchRows& rows = sequence.next_rows();
    std::set<int64_t> ids(rows.ids.begin(), rows.ids.end());
    EXPECT_EQ(ids.size(), 64u);
  }
}

}  // namespace
}  // namespace shardplan
