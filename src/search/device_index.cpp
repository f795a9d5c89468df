#include "device_index.hpp"

#include <algorithm>

namespace shardplan {

void DeviceIndex::reset(int devices, const std::vector<int64_t>& width_limits) {
  scan_ = devices <= kScanDevices;
  keys_.resize(static_cast<std::size_t>(devices));
  width_.assign(static_cast<std::size_t>(devices), 0);
  for (int r = 0; r < devices; ++r) keys_[static_cast<std::size_t>(r)] = Key{0.0, 0, r};
  if (scan_) return;
  leaves_ = 1;
  while (leaves_ < static_cast<std::size_t>(devices)) leaves_ *= 2;
  min_bytes_.assign(2 * leaves_, kNoLimit);
  for (int r = 0; r < devices; ++r) min_bytes_[leaves_ + static_cast<std::size_t>(r)] = 0;
  for (std::size_t node = leaves_ - 1; node >= 1; --node) {
    min_bytes_[node] = std::min(min_bytes_[2 * node], min_bytes_[2 * node + 1]);
  }
  trees_.resize(1 + width_limits.size());
  for (std::size_t k = 0; k < trees_.size(); ++k) {
    trees_[k].limit = k == 0 ? kNoLimit : width_limits[k - 1];
    trees_[k].built = false;
  }
  build(trees_[0]);
}

void DeviceIndex::build(Tree& tree) const {
  tree.winner.assign(2 * leaves_, kNone);
  for (std::size_t r = 0; r < keys_.size(); ++r) {
    if (width_[r] <= tree.limit) tree.winner[leaves_ + r] = static_cast<int>(r);
  }
  for (std::size_t node = leaves_ - 1; node >= 1; --node) {
    tree.winner[node] = smaller(tree.winner[2 * node], tree.winner[2 * node + 1]);
  }
  tree.built = true;
}

// After `rank`'s key or width changed. Above the first node whose winner is neither the same device as
// before nor `rank`, nothing changes: most updates stop well below the root.
void DeviceIndex::set_leaf(Tree& tree, int rank, bool within) const {
  std::size_t node = leaves_ + static_cast<std::size_t>(rank);
  const int leaf_winner = within ? rank : kNone;
  if (leaf_winner == kNone && tree.winner[node] == kNone) return;
  tree.winner[node] = leaf_winner;
  for (node /= 2; node >= 1; node /= 2) {
    const int w = smaller(tree.winner[2 * node], tree.winner[2 * node + 1]);
    if (w == tree.winner[node] && w != rank) break;
    tree.winner[node] = w;
  }
}

void DeviceIndex::update(int rank, double compute, int64_t bytes, int64_t width) {
  const auto ru = static_cast<std::size_t>(rank);
  keys_[ru] = Key{compute, bytes, rank};
  width_[ru] = width;
  if (scan_) return;
  const std::size_t leaf = leaves_ + ru;
  min_bytes_[leaf] = bytes;
  for (std::size_t node = leaf / 2; node >= 1; node /= 2) {
    const int64_t least = std::min(min_bytes_[2 * node], min_bytes_[2 * node + 1]);
    if (least == min_bytes_[node]) break;
    min_bytes_[node] = least;
  }
  for (Tree& tree : trees_) {
    if (tree.built) set_leaf(tree, rank, width <= tree.limit);
  }
}

int DeviceIndex::first(int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded) {
  if (scan_) return scan(max_bytes, max_width, excluded);
  if (max_width != kNoLimit) {
    for (Tree& tree : trees_) {
      if (tree.limit != max_width) continue;
      if (!tree.built) build(tree);
      return descend(tree, max_bytes, max_width, excluded);
    }
  }
  return descend(trees_[0], max_bytes, max_width, excluded);
}

int DeviceIndex::first(int64_t max_bytes, const std::vector<int>* excluded) const {
  return scan_ ? scan(max_bytes, kNoLimit, excluded) : descend(trees_[0], max_bytes, kNoLimit, excluded);
}

int DeviceIndex::scan(int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded) const {
  const Key* best_key = nullptr;
  for (const Key& key : keys_) {
    if (key.bytes > max_bytes || width_[static_cast<std::size_t>(key.rank)] > max_width) continue;
    if (best_key && !less(key, *best_key)) continue;
    if (excluded && std::find(excluded->begin(), excluded->end(), key.rank) != excluded->end()) continue;
    best_key = &key;
  }
  return best_key ? best_key->rank : -1;
}

int DeviceIndex::descend(const Tree& tree, int64_t max_bytes, int64_t max_width,
                         const std::vector<int>* excluded) const {
  const bool exact_tree = tree.limit == max_width;
  // Depth first, the child with the smaller key first; a subtree is skipped when it holds no device
  // with room, or none that could beat the best device found so far. In the tree of this width limit
  // devices over it rank last, so the first descent usually ends at the answer.
  int best = kNone;
  std::size_t pending[2 * 64];
  std::size_t depth = 0;
  pending[depth++] = 1;
  while (depth > 0) {
    const std::size_t node = pending[--depth];
    const int w = tree.winner[node];
    if (w == kNone || min_bytes_[node] > max_bytes || (best != kNone && smaller(best, w) == best)) continue;
    if (node >= leaves_) {
      const auto wu = static_cast<std::size_t>(w);
      if (keys_[wu].bytes > max_bytes || (!exact_tree && width_[wu] > max_width)) continue;
      if (excluded && std::find(excluded->begin(), excluded->end(), w) != excluded->end()) continue;
      best = w;
      continue;
    }
    const std::size_t l = 2 * node;
    const std::size_t r = l + 1;
    const bool left_first = smaller(tree.winner[l], tree.winner[r]) == tree.winner[l];
    pending[depth++] = left_first ? r : l;  // popped after the first child's subtree
    pending[depth++] = left_first ? l : r;
  }
  return best;
}

}  // namespace shardplan
