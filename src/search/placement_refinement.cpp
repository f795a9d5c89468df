#include "placement_refinement.hpp"

#include <algorithm>
#include <numeric>

#include "device_loads.hpp"
#include "shardplan/parallel_for.hpp"

namespace shardplan {

namespace {

// A placement as the refinement changes it: which pieces each device holds, and their loads.
class Devices {
 public:
  Devices(const std::vector<Piece>& pieces, const std::vector<int>& ranks, const ShardCatalog& catalog,
          const CostModel& model, int count)
      : pieces_(pieces), catalog_(catalog), model_(model), held_(static_cast<std::size_t>(count)) {
    for (std::size_t i = 0; i < ranks.size(); ++i) held_[static_cast<std::size_t>(ranks[i])].push_back(static_cast<int>(i));
    loads.reset(count, catalog.summary_size());
    for (std::size_t r = 0; r < held_.size(); ++r) rebuild(r);
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
    if (held_[r].size() == 1u && out >= 0 && in < 0) return 0.0;  // left empty
    scratch.assign(loads.sum(r), loads.sum(r) + loads.summary_size);
    if (out >= 0) add(scratch, out, -1.0f);
    if (in >= 0) add(scratch, in, 1.0f);
    return model_.compute_from_summary(scratch.data());
  }

  // Moves piece i and recomputes both devices' loads from their pieces, so accepted changes leave no
  // rounding drift behind.
  void move(int i, std::size_t from, std::size_t to) {
    auto& source = held_[from];
    source.erase(std::find(source.begin(), source.end(), i));
    auto& target = held_[to];
    target.insert(std::upper_bound(target.begin(), target.end(), i), i);
    rebuild(from);
    rebuild(to);
  }

  DeviceLoads loads;

 private:
  int variant(int i) const { return pieces_[static_cast<std::size_t>(i)].variant; }
  void add(std::vector<float>& sum, int i, float sign) const {
    const float* s = catalog_.summary(variant(i));
    for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += sign * s[k];
  }
  void rebuild(std::size_t r) {
    loads.clear(r);
    for (int i : held_[r]) loads.add(r, catalog_, variant(i));
    if (!held_[r].empty()) loads.compute[r] = model_.compute_from_summary(loads.sum(r));
  }

  const std::vector<Piece>& pieces_;
  const ShardCatalog& catalog_;
  const CostModel& model_;
  std::vector<std::vector<int>> held_;  // ascending piece indices
};

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
                           const CostModel& model, int64_t usable_bytes, RefineOptions options,
                           RefineStats* stats) {
  RefineStats unused;
  RefineStats& done = stats ? *stats : unused;
  done = RefineStats{};
  if (!start.feasible || start.devices.size() < 2) return start;
  const std::size_t n = start.devices.size();
  Devices devices(pieces, start.ranks, catalog, model, static_cast<int>(n));
  const DeviceLoads& loads = devices.loads;
  Placement out = start;
  out.devices = costs_from_compute(model, loads.compute, loads.width);
  out.max_cost = max_total_ms(out.devices);
  for (int round = 0; round < options.max_rounds; ++round) {
    if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
      done.cut_short = true;
      break;
    }
    // Sources: the costliest devices, and the one with the most compute, which every other device
    // waits for in the forward all-to-all (so all totals can sit near the maximum while one device
    // causes it). Targets: the cheapest devices.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return out.devices[a].total_ms() > out.devices[b].total_ms();
    });
    const auto slowest_compute =
        static_cast<std::size_t>(std::max_element(loads.compute.begin(), loads.compute.end()) - loads.compute.begin());
    std::vector<std::size_t> sources(order.begin(),
                                     order.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.source_devices)));
    if (std::find(sources.begin(), sources.end(), slowest_compute) == sources.end()) sources.push_back(slowest_compute);
    std::vector<std::size_t> targets(order.rbegin(),
                                     order.rbegin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.target_devices)));

    Change best;
    best.max = out.max_cost;
    // Every change is listed first, then evaluated (on `threads`, each into its own slot), then chosen
    // in listing order: the same choice as evaluating them one by one.
    std::vector<Change> changes;
    auto consider = [&](std::size_t from, int i, int j, std::size_t to) { changes.push_back(Change{i, j, from, to, 0.0}); };
    for (std::size_t from : sources) {
      for (int i : devices.held(from)) {
        const int64_t bytes_i = devices.piece_bytes(i);
        for (std::size_t to : targets) {
          if (to == from || devices.holds_table_of(to, i, -1)) continue;
          if (loads.bytes[to] + bytes_i <= usable_bytes) consider(from, i, -1, to);
          for (int j : devices.held(to)) {
            const int64_t bytes_j = devices.piece_bytes(j);
            if (loads.bytes[to] - bytes_j + bytes_i > usable_bytes) continue;
            if (loads.bytes[from] - bytes_i + bytes_j > usable_bytes) continue;
            if (devices.holds_table_of(from, j, i)) continue;
            consider(from, i, j, to);
          }
        }
      }
    }
    parallel_for(static_cast<int>(changes.size()), options.threads, [&](int k) {
      thread_local std::vector<float> scratch;
      thread_local std::vector<double> compute;
      thread_local std::vector<int64_t> width;
      Change& c = changes[static_cast<std::size_t>(k)];
      compute = loads.compute;
      width = loads.width;
      compute[c.from] = devices.compute_after(c.from, c.i, c.j, scratch);
      compute[c.to] = devices.compute_after(c.to, c.j, c.i, scratch);
      const int cols_j = c.j >= 0 ? devices.piece_cols(c.j) : 0;
      width[c.from] += cols_j - devices.piece_cols(c.i);
      width[c.to] += devices.piece_cols(c.i) - cols_j;
      c.max = max_total_from_compute(model, compute, width);
    });
    for (const Change& c : changes) {
      // Strictly better by more than rounding, so no cycle of equal-cost changes.
      if (c.max < best.max - 1e-9 * best.max) best = c;
    }
    if (best.i < 0) break;
    devices.move(best.i, best.from, best.to);
    out.ranks[static_cast<std::size_t>(best.i)] = static_cast<int>(best.to);
    if (best.j >= 0) {
      devices.move(best.j, best.to, best.from);
      out.ranks[static_cast<std::size_t>(best.j)] = static_cast<int>(best.from);
    }
    out.devices = costs_from_compute(model, loads.compute, loads.width);
    out.max_cost = max_total_ms(out.devices);
    ++done.rounds;
  }
  return out;
}

}  // namespace shardplan
