#pragma once
// The 17-bin reuse histogram of method.md, defined once for the importer, the trace synthesiser and
// the cost model: over the distinct row ids a batch touches, the fraction whose access count falls in
// (0,1], (1,2], (2,4], ..., (16384,32768], (32768,inf).
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// Bin of a row accessed `count` >= 1 times: 0 for 1, 1 for 2, 2 for 3..4, ..., 16 for more than 32768.
int reuse_bin(int64_t count);

// Accumulates access counts per bin; `finish` normalises (all zeros when nothing was added).
class ReuseHistBuilder {
 public:
  void add_row(int64_t access_count);  // one distinct row, accessed access_count >= 1 times
  ReuseHist finish() const;
  int64_t distinct_rows() const { return distinct_; }

 private:
  std::array<int64_t, kReuseBins> counts_{};
  int64_t distinct_ = 0;
};

// Histogram of one table's lookups (row ids, any order).
ReuseHist reuse_histogram(const std::vector<int64_t>& indices);

// L1 distance between two histograms.
double reuse_hist_l1(const ReuseHist& a, const ReuseHist& b);

}  // namespace shardplan
