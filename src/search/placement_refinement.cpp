#include "placement_refinement.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "device_loads.hpp"
#include "poll_batch.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

namespace {

// A placement as the refinement changes it: which pieces each device holds, and their loads.
class Devices {
 public:
  Devices(const std::vector<Piece>& pieces, const std::vector<int>& ranks, const ShardCatalog& catalog,
          const CostModel& model, int count)
      : pieces_(pieces), catalog_(catalog), model_(model), held_(static_cast<std::size_t>(count)), rank_(ranks) {
    for (std::size_t i = 0; i < ranks.size(); ++i)
      held_[static_cast<std::size_t>(ranks[i])].push_back(static_cast<int>(i));
    group_pieces_of_tables();
    loads.reset(count, catalog.summary_size());
    for (std::size_t r = 0; r < held_.size(); ++r) rebuild(r);
  }

  const std::vector<int>& held(std::size_t r) const { return held_[r]; }
  int64_t piece_bytes(int i) const { return catalog_.bytes(variant(i)); }
  int piece_cols(int i) const { return catalog_.cols(variant(i)); }
  double piece_ids(int i) const { return catalog_.input_ids(variant(i)); }
  // Whether piece i may lie on device r (its table's pinned ranks).
  bool may_hold(std::size_t r, int i) const { return catalog_.allows_rank(variant(i), static_cast<int>(r)); }

  // Whether device r holds a piece of piece i's table other than `except`. Looks at the table's pieces,
  // not the device's: a device may hold thousands of pieces, a table only a few.
  bool holds_table_of(std::size_t r, int i, int except) const {
    const std::vector<int>& same = table_pieces_[static_cast<std::size_t>(group_[static_cast<std::size_t>(i)])];
    return std::any_of(same.begin(), same.end(),
                       [&](int k) { return k != except && rank_[static_cast<std::size_t>(k)] == static_cast<int>(r); });
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
    rank_[static_cast<std::size_t>(i)] = static_cast<int>(to);
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
  void group_pieces_of_tables() {
    std::unordered_map<int, int> group_of_table;
    group_.resize(pieces_.size());
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      auto [at, added] =
          group_of_table.emplace(catalog_.table(variant(static_cast<int>(i))), static_cast<int>(table_pieces_.size()));
      if (added) table_pieces_.emplace_back();
      group_[i] = at->second;
      table_pieces_[static_cast<std::size_t>(at->second)].push_back(static_cast<int>(i));
    }
  }
  void rebuild(std::size_t r) {
    loads.clear(r);
    for (int i : held_[r]) loads.add(r, catalog_, variant(i));
    if (!held_[r].empty()) loads.compute[r] = model_.compute_from_summary(loads.sum(r));
  }

  const std::vector<Piece>& pieces_;
  const ShardCatalog& catalog_;
  const CostModel& model_;
  std::vector<std::vector<int>> held_;          // ascending piece indices
  std::vector<int> rank_;                       // each piece's device
  std::vector<int> group_;                      // each piece's index in table_pieces_
  std::vector<std::vector<int>> table_pieces_;  // the pieces of each table
};

// One move (j < 0) of piece i from device `from` to device `to`, or a swap with piece j on `to`.
struct Change {
  int i = -1;
  int j = -1;
  std::size_t from = 0;
  std::size_t to = 0;
  double max = 0.0;
};

// Each change's plan maximum, into its own slot (on `threads`; the result does not depend on them).
void evaluate_changes(std::vector<Change>& changes, const Devices& devices, const CostModel& model, int threads) {
  const DeviceLoads& loads = devices.loads;
  parallel_for(static_cast<int>(changes.size()), threads, [&](int k) {
    thread_local std::vector<float> scratch;
    thread_local std::vector<double> compute;
    thread_local std::vector<int64_t> width;
    thread_local std::vector<double> ids;
    Change& c = changes[static_cast<std::size_t>(k)];
    compute = loads.compute;
    width = loads.width;
    ids = loads.ids;
    compute[c.from] = devices.compute_after(c.from, c.i, c.j, scratch);
    compute[c.to] = devices.compute_after(c.to, c.j, c.i, scratch);
    const int cols_j = c.j >= 0 ? devices.piece_cols(c.j) : 0;
    width[c.from] += cols_j - devices.piece_cols(c.i);
    width[c.to] += devices.piece_cols(c.i) - cols_j;
    const double ids_j = c.j >= 0 ? devices.piece_ids(c.j) : 0.0;
    ids[c.from] += ids_j - devices.piece_ids(c.i);
    ids[c.to] += devices.piece_ids(c.i) - ids_j;
    c.max = max_total_from_compute(model, compute, width, ids);
  });
}

// Sources: the costliest devices, and the one with the most compute, which every other device waits for
// in the forward all-to-all (so all totals can sit near the maximum while one device causes it).
// Targets: the cheapest devices.
void choose_devices(const Placement& out, const DeviceLoads& loads, const RefineOptions& options,
                    std::vector<std::size_t>& sources, std::vector<std::size_t>& targets) {
  const std::size_t n = out.devices.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return out.devices[a].total_ms() > out.devices[b].total_ms(); });
  const auto slowest_compute =
      static_cast<std::size_t>(std::max_element(loads.compute.begin(), loads.compute.end()) - loads.compute.begin());
  sources.assign(order.begin(),
                 order.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.source_devices)));
  if (std::find(sources.begin(), sources.end(), slowest_compute) == sources.end()) sources.push_back(slowest_compute);
  targets.assign(order.rbegin(),
                 order.rbegin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(n, options.target_devices)));
}

// One round: every move or swap of a piece from a source to a target, listed in a fixed order and
// evaluated a batch at a time; the first strictly best in listing order wins, as if evaluated one by
// one. Returns the best change (i < 0: none lowers the maximum); `stopped` when the deadline passed
// between batches (the best change among those evaluated is still returned).
Change best_change(const Devices& devices, const Placement& out, const CostModel& model, int64_t usable_bytes,
                   const RefineOptions& options, bool& stopped) {
  const DeviceLoads& loads = devices.loads;
  std::vector<std::size_t> sources;
  std::vector<std::size_t> targets;
  choose_devices(out, loads, options, sources, targets);
  const std::size_t per_poll = changes_per_poll(out.devices.size(), 64);
  Change best;
  best.max = out.max_cost;
  std::vector<Change> changes;
  stopped = false;
  auto flush = [&] {
    evaluate_changes(changes, devices, model, options.threads);
    for (const Change& c : changes) {
      // Strictly better by more than rounding, so no cycle of equal-cost changes.
      if (c.max < best.max - 1e-9 * best.max) best = c;
    }
    changes.clear();
    stopped = options.deadline.passed();
    return !stopped;
  };
  for (std::size_t from : sources) {
    for (int i : devices.held(from)) {
      const int64_t bytes_i = devices.piece_bytes(i);
      for (std::size_t to : targets) {
        if (to == from || devices.holds_table_of(to, i, -1) || !devices.may_hold(to, i)) continue;
        if (loads.bytes[to] + bytes_i <= usable_bytes) changes.push_back(Change{i, -1, from, to, 0.0});
        for (int j : devices.held(to)) {
          const int64_t bytes_j = devices.piece_bytes(j);
          if (loads.bytes[to] - bytes_j + bytes_i > usable_bytes) continue;
          if (loads.bytes[from] - bytes_i + bytes_j > usable_bytes) continue;
          if (devices.holds_table_of(from, j, i) || !devices.may_hold(from, j)) continue;
          changes.push_back(Change{i, j, from, to, 0.0});
        }
        if (changes.size() >= per_poll && !flush()) return best;
      }
    }
  }
  flush();
  return best;
}

}  // namespace

Placement refine_placement(const std::vector<Piece>& pieces, const Placement& start, const ShardCatalog& catalog,
                           const CostModel& model, int64_t usable_bytes, RefineOptions options, RefineStats* stats) {
  RefineStats unused;
  RefineStats& done = stats ? *stats : unused;
  done = RefineStats{};
  if (!start.feasible || start.devices.size() < 2) return start;
  const std::size_t n = start.devices.size();
  Devices devices(pieces, start.ranks, catalog, model, static_cast<int>(n));
  const DeviceLoads& loads = devices.loads;
  Placement out = start;
  out.devices = costs_from_compute(model, loads.compute, loads.width, loads.ids);
  out.max_cost = max_total_ms(out.devices);
  for (int round = 0; round < options.max_rounds; ++round) {
    if (options.deadline.passed()) {
      done.cut_short = true;
      break;
    }
    bool stopped = false;
    const Change best = best_change(devices, out, model, usable_bytes, options, stopped);
    done.cut_short = stopped;
    if (best.i < 0) break;
    devices.move(best.i, best.from, best.to);
    out.ranks[static_cast<std::size_t>(best.i)] = static_cast<int>(best.to);
    if (best.j >= 0) {
      devices.move(best.j, best.to, best.from);
      out.ranks[static_cast<std::size_t>(best.j)] = static_cast<int>(best.from);
    }
    out.devices = costs_from_compute(model, loads.compute, loads.width, loads.ids);
    out.max_cost = max_total_ms(out.devices);
    ++done.rounds;
    if (stopped) break;
  }
  return out;
}

}  // namespace shardplan
