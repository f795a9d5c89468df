#include "shardplan/core/reuse_hist.hpp"

#include <algorithm>
#include <cmath>

namespace shardplan {

int reuse_bin(int64_t count) {
  if (count <= 1) return 0;
  // count in (2^(b-1), 2^b] falls in bin b; ceil(log2(count)) without floating point.
  int bin = 64 - __builtin_clzll(static_cast<unsigned long long>(count - 1));
  return std::min(bin, kReuseBins - 1);
}

void ReuseHistBuilder::add_row(int64_t access_count) {
  if (access_count <= 0) return;
  counts_[static_cast<std::size_t>(reuse_bin(access_count))] += 1;
  distinct_ += 1;
}

ReuseHist ReuseHistBuilder::finish() const {
  ReuseHist hist{};
  if (distinct_ == 0) return hist;
  for (int b = 0; b < kReuseBins; ++b) {
    hist[static_cast<std::size_t>(b)] =
        static_cast<double>(counts_[static_cast<std::size_t>(b)]) / static_cast<double>(distinct_);
  }
  return hist;
}

ReuseHist reuse_histogram(const std::vector<int64_t>& indices) {
  std::vector<int64_t> sorted(indices);
  std::sort(sorted.begin(), sorted.end());
  ReuseHistBuilder builder;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    builder.add_row(static_cast<int64_t>(j - i));
    i = j;
  }
  return builder.finish();
}

double reuse_hist_l1(const ReuseHist& a, const ReuseHist& b) {
  double sum = 0.0;
  for (int i = 0; i < kReuseBins; ++i) sum += std::abs(a[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(i)]);
  return sum;
}

}  // namespace shardplan
