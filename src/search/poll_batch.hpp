#pragma once
// How much a search scores between two polls of its deadline: each change it scores predicts every
// device's all-to-all, so a batch of about 2^16 device predictions costs about the same on any cluster
// (milliseconds), and a search stops soon after its deadline passes.
#include <algorithm>
#include <cstddef>

namespace shardplan {

inline std::size_t changes_per_poll(std::size_t devices, std::size_t minimum) {
  constexpr std::size_t kDevicePredictionsPerPoll = std::size_t{1} << 16;
  return std::max(minimum, kDevicePredictionsPerPoll / std::max<std::size_t>(devices, 1));
}

}  // namespace shardplan
