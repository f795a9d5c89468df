#include "grid_placement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "device_index.hpp"
#include "device_loads.hpp"

namespace shardplan {

bool better_placement(const Placement& a, const Placement& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (!a.feasible && a.unplaced_bytes != b.unplaced_bytes) return a.unplaced_bytes < b.unplaced_bytes;
  return a.max_cost < b.max_cost;
}

namespace {
constexpr int64_t kNoLimit = DeviceIndex::kNoLimit;

// DeviceIndex::first over a pinned table's ranks only: the first by (compute, memory, rank) with bytes
// <= max_bytes and width <= max_width, not in `excluded`; -1 when none. Pins are few, so a scan.
int first_pinned(const std::vector<int>& ranks, const DeviceLoads& loads, int64_t max_bytes, int64_t max_width,
                 const std::vector<int>* excluded) {
  int best = -1;
  for (int r : ranks) {
    const auto ru = static_cast<std::size_t>(r);
    if (loads.bytes[ru] > max_bytes || (max_width != kNoLimit && loads.width[ru] > max_width)) continue;
    if (excluded && std::find(excluded->begin(), excluded->end(), r) != excluded->end()) continue;
    const auto bu = static_cast<std::size_t>(best);
    if (best < 0 || std::tie(loads.compute[ru], loads.bytes[ru]) < std::tie(loads.compute[bu], loads.bytes[bu]))
      best = r;
  }
  return best;
}
}  // namespace

// Per-device state of a placement under way.
struct GridPlacer::Loads : DeviceLoads {
  std::vector<std::vector<int>> group_devices;  // devices already holding a piece of each split table
};

// Loads, and their index, reused across the grid's points.
struct GridPlacer::Scratch : Loads {
  DeviceIndex index;

  void reset(int devices, int size, std::size_t groups) {
    DeviceLoads::reset(devices, size);
    group_devices.assign(groups, {});
  }
};

// A placement's state just before the first piece its width cap turned from its preferred device.
struct GridPlacer::Checkpoint {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t position = kNone;  // in the placement order
  Loads loads;
  std::vector<int> ranks;
  int64_t unplaced_bytes = 0;
};

GridPlacer::GridPlacer(const ShardCatalog& catalog, const CostModel& model, const Cluster& cluster, GridOptions grid)
    : catalog_(catalog),
      model_(model),
      devices_(cluster.num_devices),
      usable_bytes_(cluster.usable_bytes_per_device()) {
  for (int i = 0; i < grid.points; ++i) {
    grid_.push_back(grid.points == 1 ? grid.min : grid.min + (grid.max - grid.min) * i / (grid.points - 1));
  }
}

// What every grid point shares: the placement order, the split tables' groups, the total width.
struct GridPlacer::Prepared {
  std::vector<int> order;
  std::vector<int> group;
  int groups = 0;
  int64_t total_width = 0;
  std::vector<int> distinct_cols;  // the piece widths present, ascending
};

GridPlacer::Prepared GridPlacer::prepare(const std::vector<Piece>& pieces) const {
  Prepared p;
  // Most expensive first; ties broken by memory, then table (the catalog's placement rank), then column
  // so the order is total: one key per piece, (rank, column offset).
  std::vector<std::pair<uint64_t, int>> keyed(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto rank = static_cast<uint64_t>(catalog_.placement_rank(pieces[i].variant));
    keyed[i] = {rank << 32 | static_cast<uint32_t>(pieces[i].col_offset), static_cast<int>(i)};
  }
  std::sort(keyed.begin(), keyed.end());
  p.order.resize(pieces.size());
  for (std::size_t i = 0; i < keyed.size(); ++i) p.order[i] = keyed[i].second;
  // Pieces of a split table should land on different devices (that is what the split is for); number
  // the split tables so each placement can track where their pieces went.
  p.group.assign(pieces.size(), -1);
  std::vector<int> group_of_table(static_cast<std::size_t>(catalog_.num_tables()), -1);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    int v = pieces[i].variant;
    p.total_width += catalog_.cols(v);
    if (v == catalog_.whole(catalog_.table(v))) continue;
    int& g = group_of_table[static_cast<std::size_t>(catalog_.table(v))];
    if (g < 0) g = p.groups++;
    p.group[i] = g;
  }
  for (const Piece& piece : pieces) p.distinct_cols.push_back(catalog_.cols(piece.variant));
  std::sort(p.distinct_cols.begin(), p.distinct_cols.end());
  p.distinct_cols.erase(std::unique(p.distinct_cols.begin(), p.distinct_cols.end()), p.distinct_cols.end());
  return p;
}

Placement GridPlacer::place(const std::vector<Piece>& pieces) const { return place_points(pieces, 0, grid_.size()); }

Placement GridPlacer::place_near(const std::vector<Piece>& pieces, double width_cap_multiplier) const {
  auto at = std::find(grid_.begin(), grid_.end(), width_cap_multiplier);
  if (at == grid_.end()) return place(pieces);  // the memory fallback's 0, or another grid's point
  const auto j = static_cast<std::size_t>(at - grid_.begin());
  return place_points(pieces, j > 0 ? j - 1 : 0, std::min(grid_.size(), j + 2));
}

Placement GridPlacer::place_points(const std::vector<Piece>& pieces, std::size_t first, std::size_t last) const {
  const Prepared prepared = prepare(pieces);
  Scratch scratch;
  Placement best;
  Placement trial;
  // Grid points ascend, so each one places exactly as the one before it up to the first piece whose
  // preferred device that smaller cap turned away: that point resumes from there.
  Checkpoint resume;
  Checkpoint reached;
  // The first trial is the best so far whatever it is: an empty Placement would rank as "nothing
  // unplaced" above every infeasible one, and be returned with no ranks and 0 B short.
  bool placed = false;
  for (std::size_t k = first; k < last; ++k) {
    const double s = grid_[k];
    std::size_t start = 0;
    if (resume.position != Checkpoint::kNone && s >= grid_[k - 1]) {
      static_cast<Loads&>(scratch) = resume.loads;
      trial.ranks = resume.ranks;
      trial.unplaced_bytes = resume.unplaced_bytes;
      start = resume.position;
    } else {
      scratch.reset(devices_, catalog_.summary_size(), static_cast<std::size_t>(prepared.groups));
    }
    bool cap_bound =
        place_by_cost(pieces, prepared.order, prepared.group, prepared.distinct_cols,
                      s * static_cast<double>(prepared.total_width) / devices_, start, scratch, trial, &reached);
    std::swap(resume, reached);
    trial.width_cap_multiplier = s;
    if (!placed || better_placement(trial, best)) std::swap(best, trial);
    placed = true;
    if (!cap_bound) break;  // every larger s places identically
  }
  if (!best.feasible) {
    scratch.reset(devices_, catalog_.summary_size(), 0);
    place_by_memory(pieces, scratch, trial);
    trial.width_cap_multiplier = 0.0;
    if (!placed || better_placement(trial, best)) std::swap(best, trial);
  }
  return best;
}

Placement GridPlacer::place_at(const std::vector<Piece>& pieces, double width_cap_multiplier) const {
  const Prepared prepared = prepare(pieces);
  Scratch scratch;
  Placement out;
  scratch.reset(devices_, catalog_.summary_size(), static_cast<std::size_t>(prepared.groups));
  place_by_cost(pieces, prepared.order, prepared.group, prepared.distinct_cols,
                width_cap_multiplier * static_cast<double>(prepared.total_width) / devices_, 0, scratch, out, nullptr);
  out.width_cap_multiplier = width_cap_multiplier;
  return out;
}

bool GridPlacer::place_by_cost(const std::vector<Piece>& pieces, const std::vector<int>& order,
                               const std::vector<int>& group, const std::vector<int>& distinct_cols, double width_cap,
                               std::size_t start, Scratch& scratch, Placement& out, Checkpoint* reached) const {
  bool cap_bound = false;
  if (start == 0) {
    out.ranks.assign(pieces.size(), -1);
    out.unplaced_bytes = 0;
  }
  if (reached) reached->position = Checkpoint::kNone;
  // Equal to the width test `width + cols <= width_cap` for integer widths.
  const double cap_floor = std::floor(width_cap);
  const int64_t cap_width = cap_floor >= 1e18 ? kNoLimit : static_cast<int64_t>(cap_floor);
  DeviceIndex& index = scratch.index;
  std::vector<int64_t> limits;  // the cap less each piece width present: the width limits asked about
  if (cap_width != kNoLimit) {
    for (int cols : distinct_cols) limits.push_back(cap_width - cols);
  }
  index.reset(devices_, limits);
  if (start > 0) {
    for (int r = 0; r < devices_; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      index.update(r, scratch.compute[ru], scratch.bytes[ru], scratch.width[ru]);
    }
  }
  for (std::size_t position = start; position < order.size(); ++position) {
    const int i = order[position];
    const Piece& piece = pieces[static_cast<std::size_t>(i)];
    const int64_t bytes = catalog_.bytes(piece.variant);
    const int cols = catalog_.cols(piece.variant);
    const int g = group[static_cast<std::size_t>(i)];
    const std::vector<int>* siblings = g >= 0 ? &scratch.group_devices[static_cast<std::size_t>(g)] : nullptr;
    // Preference, each the first device by (compute, memory, rank) where memory fits: within the width
    // cap and apart from the table's other pieces; else apart from them; else anywhere.
    const int64_t room = usable_bytes_ - bytes;
    const std::vector<int>& pins = catalog_.pinned(catalog_.table(piece.variant));
    auto first = [&](int64_t max_width, const std::vector<int>* excluded) {
      if (!pins.empty()) return first_pinned(pins, scratch, room, max_width, excluded);
      return max_width == kNoLimit ? index.first(room, excluded) : index.first(room, max_width, excluded);
    };
    const int apart = first(kNoLimit, siblings);
    int r = apart >= 0 ? apart : first(kNoLimit, nullptr);
    if (apart >= 0 && cap_width != kNoLimit && scratch.width[static_cast<std::size_t>(apart)] + cols > cap_width) {
      if (reached && reached->position == Checkpoint::kNone) {
        reached->position = position;
        reached->loads = scratch;
        reached->ranks = out.ranks;
        reached->unplaced_bytes = out.unplaced_bytes;
      }
      const int within_cap = first(cap_width - cols, siblings);
      if (within_cap >= 0) {
        r = within_cap;
        cap_bound = true;
      }
    }
    if (r < 0) {
      out.unplaced_bytes += bytes;
      continue;
    }
    const auto ru = static_cast<std::size_t>(r);
    scratch.compute[ru] = model_.compute_from_summary(scratch.add(ru, catalog_, piece.variant));
    index.update(r, scratch.compute[ru], scratch.bytes[ru], scratch.width[ru]);
    if (siblings) scratch.group_devices[static_cast<std::size_t>(g)].push_back(r);
    out.ranks[static_cast<std::size_t>(i)] = r;
  }
  finish(scratch, out);
  return cap_bound;
}

void GridPlacer::place_by_memory(const std::vector<Piece>& pieces, Scratch& scratch, Placement& out) const {
  std::vector<int> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return catalog_.bytes(pieces[static_cast<std::size_t>(a)].variant) >
           catalog_.bytes(pieces[static_cast<std::size_t>(b)].variant);
  });
  out.ranks.assign(pieces.size(), -1);
  out.unplaced_bytes = 0;
  for (int i : order) {
    const Piece& piece = pieces[static_cast<std::size_t>(i)];
    const int64_t bytes = catalog_.bytes(piece.variant);
    const std::vector<int>& pins = catalog_.pinned(catalog_.table(piece.variant));
    const int emptiest =
        pins.empty()
            ? static_cast<int>(std::min_element(scratch.bytes.begin(), scratch.bytes.end()) - scratch.bytes.begin())
            : *std::min_element(pins.begin(), pins.end(), [&](int a, int b) {
                return scratch.bytes[static_cast<std::size_t>(a)] < scratch.bytes[static_cast<std::size_t>(b)];
              });
    const auto ru = static_cast<std::size_t>(emptiest);
    if (scratch.bytes[ru] + bytes > usable_bytes_) {
      out.unplaced_bytes += bytes;
      continue;
    }
    scratch.add(ru, catalog_, piece.variant);
    out.ranks[static_cast<std::size_t>(i)] = static_cast<int>(ru);
  }
  for (std::size_t r = 0; r < scratch.compute.size(); ++r) {
    scratch.compute[r] = scratch.bytes[r] > 0 ? model_.compute_from_summary(scratch.sum(r)) : 0.0;
  }
  finish(scratch, out);
}

void GridPlacer::finish(Scratch& scratch, Placement& out) const {
  out.feasible = out.unplaced_bytes == 0;
  if (!out.feasible) {
    out.devices.assign(static_cast<std::size_t>(devices_), DeviceCost{});
    out.max_cost = std::numeric_limits<double>::infinity();
    return;
  }
  out.devices = costs_from_compute(model_, scratch.compute, scratch.width, scratch.ids);
  out.max_cost = max_total_ms(out.devices);
}

}  // namespace shardplan
