#include "grid_placement.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include "device_loads.hpp"

namespace shardplan {

bool better_placement(const Placement& a, const Placement& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (!a.feasible && a.unplaced_bytes != b.unplaced_bytes) return a.unplaced_bytes < b.unplaced_bytes;
  return a.max_cost < b.max_cost;
}

// Per-device state of one placement, reused across the grid's points.
struct GridPlacer::Scratch : DeviceLoads {
  std::vector<std::vector<int>> group_devices;  // devices already holding a piece of each split table

  void reset(int devices, int size, std::size_t groups) {
    DeviceLoads::reset(devices, size);
    group_devices.assign(groups, {});
  }
};

GridPlacer::GridPlacer(const ShardCatalog& catalog, const CostModel& model, const Cluster& cluster, GridOptions grid)
    : catalog_(catalog), model_(model), devices_(cluster.num_devices), usable_bytes_(cluster.usable_bytes_per_device()) {
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
};

GridPlacer::Prepared GridPlacer::prepare(const std::vector<Piece>& pieces) const {
  Prepared p;
  // Most expensive first; ties broken by memory, then table and column so the order is total.
  p.order.resize(pieces.size());
  std::iota(p.order.begin(), p.order.end(), 0);
  std::sort(p.order.begin(), p.order.end(), [&](int a, int b) {
    const Piece& pa = pieces[static_cast<std::size_t>(a)];
    const Piece& pb = pieces[static_cast<std::size_t>(b)];
    double ca = catalog_.alone_cost(pa.variant);
    double cb = catalog_.alone_cost(pb.variant);
    if (ca != cb) return ca > cb;
    if (catalog_.bytes(pa.variant) != catalog_.bytes(pb.variant)) return catalog_.bytes(pa.variant) > catalog_.bytes(pb.variant);
    if (catalog_.table(pa.variant) != catalog_.table(pb.variant)) return catalog_.table(pa.variant) < catalog_.table(pb.variant);
    return pa.col_offset < pb.col_offset;
  });
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
  return p;
}

Placement GridPlacer::place(const std::vector<Piece>& pieces) const {
  const Prepared prepared = prepare(pieces);
  Scratch scratch;
  Placement best;
  Placement trial;
  for (double s : grid_) {
    scratch.reset(devices_, catalog_.summary_size(), static_cast<std::size_t>(prepared.groups));
    bool cap_bound = place_by_cost(pieces, prepared.order, prepared.group,
                                   s * static_cast<double>(prepared.total_width) / devices_, scratch, trial);
    trial.width_cap_multiplier = s;
    if (better_placement(trial, best)) std::swap(best, trial);
    if (!cap_bound) break;  // every larger s places identically
  }
  if (!best.feasible) {
    scratch.reset(devices_, catalog_.summary_size(), 0);
    place_by_memory(pieces, scratch, trial);
    trial.width_cap_multiplier = 0.0;
    if (better_placement(trial, best)) std::swap(best, trial);
  }
  return best;
}

Placement GridPlacer::place_at(const std::vector<Piece>& pieces, double width_cap_multiplier) const {
  const Prepared prepared = prepare(pieces);
  Scratch scratch;
  Placement out;
  scratch.reset(devices_, catalog_.summary_size(), static_cast<std::size_t>(prepared.groups));
  place_by_cost(pieces, prepared.order, prepared.group,
                width_cap_multiplier * static_cast<double>(prepared.total_width) / devices_, scratch, out);
  out.width_cap_multiplier = width_cap_multiplier;
  return out;
}

bool GridPlacer::place_by_cost(const std::vector<Piece>& pieces, const std::vector<int>& order,
                               const std::vector<int>& group, double width_cap, Scratch& scratch,
                               Placement& out) const {
  bool cap_bound = false;
  out.ranks.assign(pieces.size(), -1);
  out.unplaced_bytes = 0;
  // Devices by (predicted compute, memory used, rank): the first acceptable one is the method's choice.
  std::set<std::tuple<double, int64_t, int>> by_cost;
  for (int r = 0; r < devices_; ++r) by_cost.emplace(0.0, 0, r);
  for (int i : order) {
    const Piece& piece = pieces[static_cast<std::size_t>(i)];
    const int64_t bytes = catalog_.bytes(piece.variant);
    const int cols = catalog_.cols(piece.variant);
    const int g = group[static_cast<std::size_t>(i)];
    const std::vector<int>* siblings = g >= 0 ? &scratch.group_devices[static_cast<std::size_t>(g)] : nullptr;
    // Preference: within the width cap and apart from the table's other pieces; else apart from them;
    // else anywhere memory fits.
    int within_cap = -1;
    int apart = -1;
    int fits = -1;
    for (const auto& [cost, used, r] : by_cost) {
      const auto ru = static_cast<std::size_t>(r);
      if (used + bytes > usable_bytes_) continue;
      if (fits < 0) fits = r;
      if (siblings && std::find(siblings->begin(), siblings->end(), r) != siblings->end()) continue;
      if (apart < 0) apart = r;
      if (static_cast<double>(scratch.width[ru] + cols) <= width_cap) {
        within_cap = r;
        break;
      }
    }
    int r = within_cap >= 0 ? within_cap : apart >= 0 ? apart : fits;
    cap_bound = cap_bound || r != (apart >= 0 ? apart : fits);
    if (r < 0) {
      out.unplaced_bytes += bytes;
      continue;
    }
    const auto ru = static_cast<std::size_t>(r);
    by_cost.erase({scratch.compute[ru], scratch.bytes[ru], r});
    scratch.compute[ru] = model_.compute_from_summary(scratch.add(ru, catalog_, piece.variant));
    by_cost.emplace(scratch.compute[ru], scratch.bytes[ru], r);
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
    auto emptiest = std::min_element(scratch.bytes.begin(), scratch.bytes.end());
    if (*emptiest + bytes > usable_bytes_) {
      out.unplaced_bytes += bytes;
      continue;
    }
    const auto ru = static_cast<std::size_t>(emptiest - scratch.bytes.begin());
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
  out.devices = costs_from_compute(model_, scratch.compute, scratch.width);
  out.max_cost = max_total_ms(out.devices);
}

}  // namespace shardplan
