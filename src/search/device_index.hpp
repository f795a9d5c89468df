#pragma once
// The greedy placement's device order, (predicted compute, memory used, rank), as tournament trees.
// "The first device in that order with room for a piece and under the width cap" must be fast with
// thousands of devices: walking an ordered set cost O(D) per piece once most devices neared the cap
// (most of the search's time at 1,000 GPUs). Here each width limit the placement asks about (the cap
// minus each piece width present) has its own tree, in which devices over that limit rank last, so
// every query is a descent of O(log D); an update costs O(log D) per tree. A limit's tree is built on
// its first query, not at reset: a placement's first pieces fit under the cap and never ask, and the
// trees nobody asked about cost their updates for nothing. A few devices are scanned instead.
#include <cstdint>
#include <limits>
#include <vector>

namespace shardplan {

class DeviceIndex {
 public:
  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

  // Every device empty: key (0, 0, rank), width 0. `width_limits`: the limits first() will be asked
  // about besides kNoLimit (a few distinct values).
  void reset(int devices, const std::vector<int64_t>& width_limits = {});
  void update(int rank, double compute, int64_t bytes, int64_t width);

  // The first device in key order with bytes <= max_bytes and width <= max_width (kNoLimit or one of
  // the limits given to reset) and not in `excluded` (may be null; a few ranks); -1 when none. Builds
  // the limit's tree on its first query.
  int first(int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded);
  // The same without a width limit: changes nothing, so concurrent calls are safe.
  int first(int64_t max_bytes, const std::vector<int>* excluded) const;

 private:
  struct Key {
    double compute;
    int64_t bytes;
    int rank;
  };
  static bool less(const Key& a, const Key& b) {
    if (a.compute != b.compute) return a.compute < b.compute;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.rank < b.rank;
  }
  // One tree per width limit: each node holds the device of least key among the leaves below it that
  // are within the limit, kNone when there is none. Ranks, not keys: a node is 4 bytes, not 24.
  static constexpr int kNone = -1;
  struct Tree {
    int64_t limit = kNoLimit;
    bool built = false;
    std::vector<int> winner;
  };
  int smaller(int a, int b) const {
    if (a == kNone) return b;
    if (b == kNone) return a;
    return less(keys_[static_cast<std::size_t>(b)], keys_[static_cast<std::size_t>(a)]) ? b : a;
  }
  void build(Tree& tree) const;
  void set_leaf(Tree& tree, int rank, bool within) const;
  int descend(const Tree& tree, int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded) const;
  int scan(int64_t max_bytes, int64_t max_width, const std::vector<int>* excluded) const;

  // Up to this many devices a scan of them all is faster than keeping trees.
  static constexpr int kScanDevices = 32;
  bool scan_ = false;
  std::vector<Key> keys_;           // per device
  std::size_t leaves_ = 0;          // a power of two; leaves past the devices are never chosen
  std::vector<int64_t> min_bytes_;  // per node, over every leaf
  std::vector<int64_t> width_;      // per device
  std::vector<Tree> trees_;         // trees_[0]: no limit, always built
};

}  // namespace shardplan
