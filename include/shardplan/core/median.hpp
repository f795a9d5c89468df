#pragma once
// The median of a list (the mean of the middle two for an even count; 0 for none).
#include <algorithm>
#include <vector>

namespace shardplan {

inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace shardplan
