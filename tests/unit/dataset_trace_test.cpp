#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/reuse_hist.hpp"
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

void expect_well_formed(const IndexTrace& trace, const Table& table, int64_t batch) {
  ASSERT_EQ(static_cast<int64_t>(trace.offsets.size()), batch + 1);
  EXPECT_EQ(trace.offsets.front(), 0);
  EXPECT_EQ(trace.offsets.back(), static_cast<int64_t>(trace.indices.size()));
  EXPECT_TRUE(std::is_sorted(trace.offsets.begin(), trace.offsets.end()));
  auto [lo, hi] = std::minmax_element(trace.indices.begin(), trace.indices.end());
  if (!trace.indices.empty()) {
    EXPECT_GE(*lo, 0);
    EXPECT_LT(*hi, table.rows);
  }
}

TEST(DatasetTrace, MeanBagLengthIsThePoolingFactor) {
  for (double pf : {0.37, 1.0, 15.8, 194.0}) {
    Table table = make_table(6'618'839, pf);
    constexpr int64_t kBatch = 4096;
    IndexTrace trace = synthesize_trace(table, kBatch, 1);
    expect_well_formed(trace, table, kBatch);
    double mean = static_cast<double>(trace.indices.size()) / kBatch;
    EXPECT_NEAR(mean, pf, 0.5 / kBatch) << pf;
    EXPECT_EQ(static_cast<int64_t>(trace.indices.size()), trace_lookups(table, kBatch));
  }
}

TEST(DatasetTrace, BagLengthsVaryAroundTheMean) {
  Table table = make_table(1'000'000, 20.0);
  IndexTrace trace = synthesize_trace(table, 8192, 3);
  double sum = 0.0;
  double squares = 0.0;
  int empty = 0;
  for (std::size_t i = 0; i + 1 < trace.offsets.size(); ++i) {
    auto length = static_cast<double>(trace.offsets[i + 1] - trace.offsets[i]);
    sum += length;
    squares += length * length;
    empty += length == 0 ? 1 : 0;
  }
  double mean = sum / 8192;
  double cv = std::sqrt(squares / 8192 - mean * mean) / mean;
  EXPECT_NEAR(cv, 1.0, 0.1);  // exponential shares: spread like a geometric law
  EXPECT_GT(empty, 0);
}

TEST(DatasetTrace, ReuseHistogramMatchesTheTablesForALargeBatch) {
  ReuseHist cold = {0.55, 0.2, 0.12, 0.07, 0.04, 0.02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  ReuseHist hot = {0.01, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.12, 0.12, 0.1, 0.09, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02};
  struct Case {
    Table table;
    const char* what;
  };
  for (const Case& c :
       {Case{make_table(10'000'000, 20.0), "default (dlrm_datasets aggregate)"},
        Case{make_table(10'000'000, 3.0, cold), "cold"}, Case{make_table(2'000'000, 25.0, hot), "hot"}}) {
    IndexTrace trace = synthesize_trace(c.table, 65536, 11);
    expect_well_formed(trace, c.table, 65536);
    ReuseHist measured = reuse_histogram(trace.indices);
    EXPECT_LT(reuse_hist_l1(measured, c.table.reuse_hist_or_default()), 0.05) << c.what;
    // The plan predicts the trace's histogram exactly (the pool statistics rely on it).
    EXPECT_EQ(measured, trace_bin_plan(c.table, 65536).histogram()) << c.what;
  }
}

TEST(DatasetTrace, SameSeedSameTraceOtherSeedOtherTrace) {
  Table table = make_table(500'000, 12.5);
  IndexTrace a = synthesize_trace(table, 2048, 77);
  IndexTrace b = synthesize_trace(table, 2048, 77);
  IndexTrace c = synthesize_trace(table, 2048, 78);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_NE(a.indices, c.indices);
  EXPECT_NE(a.offsets, c.offsets);
}

TEST(DatasetTrace, EdgeCasesStayWellFormed) {
  Table unused = make_table(1000, 0.0);
  IndexTrace empty = synthesize_trace(unused, 16, 1);
  EXPECT_TRUE(empty.indices.empty());
  EXPECT_EQ(empty.offsets, std::vector<int64_t>(17, 0));

  Table tiny = make_table(3, 50.0);  // 3 rows read 50 times per sample
  IndexTrace trace = synthesize_trace(tiny, 100, 1);
  expect_well_formed(trace, tiny, 100);
  EXPECT_EQ(trace.indices.size(), 5000u);

  ReuseHist none{};  // all zero: the importer's "no lookups seen"; the default histogram is used
  Table zero_hist = make_table(100'000, 2.0, none);
  expect_well_formed(synthesize_trace(zero_hist, 64, 1), zero_hist, 64);

  Table one_sample = make_table(100, 1.0);
  expect_well_formed(synthesize_trace(one_sample, 1, 1), one_sample, 1);

  EXPECT_THROW(synthesize_trace(one_sample, 0, 1), InputError);
}

// Cost in the batch, not the rows: a trace of a trillion-row table holds no per-row state (it would need
// terabytes), so a 65,536-sample batch of 20 lookups is built from the batch alone. Deterministic, unlike
// the wall-clock bound this replaced; timings live in benchmarks.
TEST(DatasetTrace, A65536SampleBatchNeedsNoPerRowState) {
  Table table = make_table(kMaxRows, 20.0);
  IndexTrace trace = synthesize_trace(table, 65536, 5);
  EXPECT_EQ(trace.indices.size(), 1'310'720u);
  EXPECT_TRUE(
      std::all_of(trace.indices.begin(), trace.indices.end(), [](int64_t id) { return id >= 0 && id < kMaxRows; }));
}

}  // namespace
}  // namespace shardplan
