#include "device_index.hpp"

#include <algorithm>

namespace shardplan {

namespace {
const int kNever = std::numeric_limits<int>::max();
}

void DeviceIndex::reset(int devices, const std::vector<int64_t>& width_limits) {
  scan_ = devices <= kScanDevices;
  if (scan_) {
    keys_.resize(static_cast<std::size_t>(devices));
    width_.assign(static_cast<std::size_t>(devices), 0);
    for (int r = 0; r < devices; ++r) keys_[static_cast<std::size_t>(r)] = Key{0.0, 0, r};
    return;
  }
  leaves_ = 1;
  while (leaves_ < static_cast<std::size_t>(devices)) leaves_ *= 2;
  const Key last{std::numeric_limits<double>::infinity(), kNoLimit, kNever};
  min_bytes_.assign(2 * leaves_, kNoLimit);
  width_.assign(leaves_, 0);
  trees_.resize(1 + width_limits.size());
  trees_[0].limit = kNoLimit;
  for (std::size_t k = 0; k < width_limits.size(); ++k) trees_[k + 1].limit = width_limits[k];
  for (Tree& tree : trees_) {
    tree.min_key.assign(2 * leaves_, last);
    for (int r = 0; r < devices; ++r) {
      if (tree.limit >= 0) tree.min_key[leaves_ + static_cast<std::size_t>(r)] = Key{0.0, 0, r};
    }
  }
  for (int r = 0; r < devices; ++r) min_bytes_[leaves_ + static_cast<std::size_t>(r)] = 0;
  for (std::size_t node = leaves_ - 1; node >= 1; --node) {
    min_bytes_[node] = std::min(min_bytes_[2 * node], min_bytes_[2 * node + 1]);
    for (Tree& tree : trees_) pull(tree, node);
  }
}

void DeviceIndex::pull(Tree& tree, std::size_t node) {
  const Key& l = tree.min_key[2 * node];
  const Key& r = tree.min_key[2 * node + 1];
  tree.min_key[node] = less(r, l) ? r : l;
}

void DeviceIndex::update(int rank, double compute, int64_t bytes, int64_t width) {
  if (scan_) {
    keys_[static_cast<std::size_t>(rank)] = Key{compute, bytes, rank};
    width_[static_cast<std::size_t>(rank)] = width;
    return;
  }
  const std::size_t leaf = leaves_ + static_cast<std::size_t>(rank);
  width_[static_cast<std::size_t>(rank)] = width;
  min_bytes_[leaf] = bytes;
  for (std::size_t node = leaf / 2; node >= 1; node /= 2) {
    min_bytes_[node] = std::min(min_bytes_[2 * node], min_bytes_[2 * node + 1]);
  }
  const Key key{compute, bytes, rank};
  const Key last{std::numeric_limits<double>::infinity(), kNoLimit, kNever};
  for (Tree& tree : trees_) {
    tree.min_key[leaf] = width <= tree.limit ? key : last;
    for (std::size_t node = leaf / 2; node >= 1; node /= 2) pull(tree, node);
  }
}

int DeviceIndex::first(int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded) const {
  if (scan_) {
    const Key* best_key = nullptr;
    for (const Key& key : keys_) {
      if (key.bytes > max_bytes || width_[static_cast<std::size_t>(key.rank)] > max_width) continue;
      if (best_key && !less(key, *best_key)) continue;
      if (excluded && std::find(excluded->begin(), excluded->end(), key.rank) != excluded->end()) continue;
      best_key = &key;
    }
    return best_key ? best_key->rank : -1;
  }
  const Tree* tree = &trees_[0];
  for (const Tree& t : trees_) {
    if (t.limit == max_width) tree = &t;
  }
  const bool exact_tree = tree->limit == max_width;
  const std::vector<Key>& keys = tree->min_key;
  // Depth first, the child with the smaller key first; a subtree is skipped when it holds no device
  // with room, or none that could beat the best device found so far. In the tree of this width limit
  // devices over it rank last, so the first descent usually ends at the answer.
  int best = -1;
  const Key* best_key = nullptr;
  std::size_t pending[2 * 64];
  std::size_t depth = 0;
  pending[depth++] = 1;
  while (depth > 0) {
    const std::size_t node = pending[--depth];
    const Key& key = keys[node];
    if (key.rank == kNever || min_bytes_[node] > max_bytes || (best_key && !less(key, *best_key))) continue;
    if (node >= leaves_) {
      const int rank = key.rank;
      if (key.bytes > max_bytes || (!exact_tree && width_[node - leaves_] > max_width)) continue;
      if (excluded && std::find(excluded->begin(), excluded->end(), rank) != excluded->end()) continue;
      best = rank;
      best_key = &key;
      continue;
    }
    const std::size_t l = 2 * node;
    const std::size_t r = l + 1;
    const bool left_first = !less(keys[r], keys[l]);
    pending[depth++] = left_first ? r : l;  // popped after the first child's subtree
    pending[depth++] = left_first ? l : r;
  }
  return best;
}

}  // namespace shardplan
