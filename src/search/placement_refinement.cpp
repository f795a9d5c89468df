#include "placement_refinement.hpp"

#include <algorithm>
#include <numeric>

namespace shardplan {

namespace {

// Device state of a placement: which pieces each device holds and what the model needs of it.
class Devices {
 public:
  Devices(const std::vector<Piece>& pieces, const std::vector<int>& ranks, const ShardCatalog& catalog,
          const CostModel& model, int count)
      : pieces_(pieces), catalog_(catalog), model_(model), held_(static_cast<std::size_t>(count)) {
    for (std::size_t i = 0; i < ranks.size(); ++i) held_[static_cast<std::size_t>(ranks[i])].push_back(static_cast<int>(i));
    const auto n = static_cast<std::size_t>(count);
    summary_size_ = static_cast<std::size_t>(catalog.summary_size());
    sums_.assign(n * summary_size_, 0.0f);
    compute.assign(n, 0.0);
    bytes.assign(n, 0);
    width.assign(n, 0);
    for (std::size_t r = 0; r < n; ++r) rebuild(r);
  }

  const std::vector<int>& held(std::size_t r) const { return held_[r]; }
  int64_t piece_bytes(int i) const { return catalog_.bytes(variant(i)); }
  int piece_cols(int i) const { return catalog_.cols(variant(i)); }

  // Whether device r holds a piece of piece i's table other than `except`.
  bool holds_table_of(std::size_t r, int i, int except) const {
    const int table = catalog_.table(variant(i));
    return std::any_of(held_[r].begin(), held_[r].end(),
                       [&](int k) { return k != except && catalog_.table(variant(k)) == table; });
  }

  // Device r's compute if `out` (or -1) left it and `in` (or -1) joined it.
  double compute_after(std::size_t r, int out, int in, std::vector<float>& scratch) const {
    scratch.assign(sums_.begin() + static_cast<std::ptrdiff_t>(r * summary_size_),
                   sums_.begin() + static_cast<std::ptrdiff_t>((r + 1) * summary_size_));
    if (out >= 0) add(scratch, out, -1.0f);
    if (in >= 0) add(scratch, in, 1.0f);
    const bool empty = held_[r].size() == 1u && out >= 0 && in < 0;
    return empty ? 0.0 : model_.compute_from_summary(scratch.data());
  }

  void move(int i, std::size_t from, std::size_t to) {
    auto& source = held_[from];
    source.erase(std::find(source.begin(), source.end(), i));
    auto& target = held_[to];
    target.insert(std::upper_bound(target.begin(), target.end(), i), i);
  }

  // Sums over the device's pieces from scratch, so accepted moves leave no rounding drift behind.
  void rebuild(std::size_t r) {
    float* sum = sums_.data() + r * summary_size_;
    std::fill(sum, sum + summary_size_, 0.0f);
    bytes[r] = 0;
    width[r] = 0;
    for (int i : held_[r]) {
      const float* s = catalog_.summary(variant(i));
      for (std::size_t k = 0; k < summary_size_; ++k) sum[k] += s[k];
      bytes[r] += piece_bytes(i);
      width[r] += piece_cols(i);
    }
    compute[r] = held_[r].empty() ? 0.0 : model_.compute_from_summary(sum);
  }

  std::vector<double> compute;
  std::vector<int64_t> bytes;
  std::vector<int64_t> width;

 private:
  int variant(int i) const { return pieces_[static_cast<std::size_t>(i)].variant; }
  void add(std::vector<float>& sum, int i, float sign) const {
    const float* s = catalog_.summary(variant(i));
    for (std::size_t k = 0; k < summary_size_; ++k) sum[k] += sign * s[k];
  }

  const std::vector<Piece>& pieces_;
  const ShardCatalog& catalog_;
  const CostModel& model_;
  std::vector<std::vector<int>> held_;  // ascending piece indices
  std::size_t summary_size_ = 0;
  std::vector<float> sums_;
};

struct Totals {
  std::vector<double> total;
  double max = 0.0;
};

Totals totals_of(const CostModel& model, const std::vector<int64_t>& width, const std::vector<double>& compute) {
  std::vector<double> fw, bw;
  model.predict_comm(width, compute, fw, bw);
  Totals t;
  t.total.resize(compute.size());
  for (std::size_t r = 0; r < compute.size(); ++r) {
    t.total[r] = compute[r] + fw[r] + bw[r];
    t.max = std::max(t.max, t.total[r]);
  }
  return t;
}

// One move (j < 0) of piece i from device `from` to device `to`, or a swap with piece j on `to`.
struct Change {
  int i = -1;
  int j = -1;
  std::size_t from = 0;
  std::size_t to = 0;
  double max = 0.0;
};

}  // namespace

Placement refine_placement(const std::vector<Piece>& pieces, const Placement& start, const ShardCatalog& catalog,
                           const CostModel& model, int64_t usable_bytes, RefineOptions options) {
  if (!start.feasible || start.devices.size() < 2) return start;
  const std::size_t n = start.devices.size();
  Devices devices(pieces, start.ranks, catalog, model, static_cast<int>(n));
  Placement out = start;
  Totals current = totals_of(model, devices.width, devices.compute);
  std::vector<float> scratch;
  std::vector<double> compute;
  std::vector<int64_t> width;
  for (int round = 0; round < options.max_rounds; ++round) {
    // Sources: the costliest devices, and the one with the most compute, which every other device
    // waits for in the forward all-to-all (so all totals can sit near the maximum while one device
    // causes it). Targets: the cheapest devices.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return current.total[a] > current.total[b]; });
    const auto slowest_compute = static_cast<std::size_t>(
        std::max_element(devices.compute.begin(), devices.compute.end()) - devices.compute.begin());
    std::vector<std::size_t> sources(order.begin(),
                                     order.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.source_devices)));
    if (std::find(sources.begin(), sources.end(), slowest_compute) == sources.end()) sources.push_back(slowest_compute);
    std::vector<std::size_t> targets(order.rbegin(),
                                     order.rbegin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.target_devices)));

    Change best;
    best.max = current.max;
    auto consider = [&](std::size_t bound, int i, int j, std::size_t to) {
      compute = devices.compute;
      width = devices.width;
      compute[bound] = devices.compute_after(bound, i, j, scratch);
      compute[to] = devices.compute_after(to, j, i, scratch);
      const int cols_j = j >= 0 ? devices.piece_cols(j) : 0;
      width[bound] += cols_j - devices.piece_cols(i);
      width[to] += devices.piece_cols(i) - cols_j;
      double max = totals_of(model, width, compute).max;
      // Strictly better by more than rounding, so no cycle of equal-cost changes.
      if (max < best.max - 1e-9 * best.max) best = Change{i, j, bound, to, max};
    };
    for (std::size_t bound : sources) {
      for (int i : devices.held(bound)) {
        const int64_t bytes_i = devices.piece_bytes(i);
        for (std::size_t to : targets) {
          if (to == bound || devices.holds_table_of(to, i, -1)) continue;
          if (devices.bytes[to] + bytes_i <= usable_bytes) consider(bound, i, -1, to);
          for (int j : devices.held(to)) {
            const int64_t bytes_j = devices.piece_bytes(j);
            if (devices.bytes[to] - bytes_j + bytes_i > usable_bytes) continue;
            if (devices.bytes[bound] - bytes_i + bytes_j > usable_bytes) continue;
            if (devices.holds_table_of(bound, j, i)) continue;
            consider(bound, i, j, to);
          }
        }
      }
    }
    if (best.i < 0) break;
    const std::size_t bound = best.from;
    devices.move(best.i, bound, best.to);
    out.ranks[static_cast<std::size_t>(best.i)] = static_cast<int>(best.to);
    if (best.j >= 0) {
      devices.move(best.j, best.to, bound);
      out.ranks[static_cast<std::size_t>(best.j)] = static_cast<int>(bound);
    }
    devices.rebuild(bound);
    devices.rebuild(best.to);
    current = totals_of(model, devices.width, devices.compute);
  }
  std::vector<double> fw, bw;
  model.predict_comm(devices.width, devices.compute, fw, bw);
  out.max_cost = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    out.devices[r] = DeviceCost{devices.compute[r], fw[r], bw[r]};
    out.max_cost = std::max(out.max_cost, out.devices[r].total_ms());
  }
  return out;
}

}  // namespace shardplan
