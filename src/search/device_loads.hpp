#pragma once
// What a placement keeps per device while it assigns pieces: the sum of the pieces' cost-model summaries
// (a device's compute is the model's head over it), its memory, its output width and the ids per sample
// its input all-to-all brings. Shared by the greedy grid placement and the refinement after it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "shard_catalog.hpp"

namespace shardplan {

struct DeviceLoads {
  std::size_t summary_size = 0;
  std::vector<float> sums;  // devices x summary_size
  std::vector<double> compute;
  std::vector<int64_t> bytes;
  std::vector<int64_t> width;
  std::vector<double> ids;

  void reset(int devices, int size) {
    const auto n = static_cast<std::size_t>(devices);
    summary_size = static_cast<std::size_t>(size);
    sums.assign(n * summary_size, 0.0f);
    compute.assign(n, 0.0);
    bytes.assign(n, 0);
    width.assign(n, 0);
    ids.assign(n, 0.0);
  }

  const float* sum(std::size_t r) const { return sums.data() + r * summary_size; }

  // Adds a piece to device r; returns the device's summary sum, which predicts its compute.
  const float* add(std::size_t r, const ShardCatalog& catalog, int variant) {
    float* s = sums.data() + r * summary_size;
    const float* summary = catalog.summary(variant);
    for (std::size_t k = 0; k < summary_size; ++k) s[k] += summary[k];
    bytes[r] += catalog.bytes(variant);
    width[r] += catalog.cols(variant);
    ids[r] += catalog.input_ids(variant);
    return s;
  }

  // Device r back to empty.
  void clear(std::size_t r) {
    std::fill(sums.begin() + static_cast<std::ptrdiff_t>(r * summary_size),
              sums.begin() + static_cast<std::ptrdiff_t>((r + 1) * summary_size), 0.0f);
    compute[r] = 0.0;
    bytes[r] = 0;
    width[r] = 0;
    ids[r] = 0.0;
  }
};

}  // namespace shardplan
