#include "replan_state.hpp"

#include <algorithm>
#include <functional>
#include <tuple>

namespace shardplan {

ReplanState::ReplanState(const CostModel& model, const Cluster& cluster, const Plan& fixed,
                         const std::vector<Table>& fixed_tables)
    : model_(model), usable_(cluster.usable_bytes_per_device()), size_(static_cast<std::size_t>(model.summary_size())) {
  const auto n = static_cast<std::size_t>(cluster.num_devices);
  held_.resize(n);
  fixed_sum_.assign(n, std::vector<float>(size_, 0.0f));
  fixed_bytes_.assign(n, 0);
  fixed_width_.assign(n, 0);
  fixed_count_.assign(n, 0);
  fixed_ids_.assign(n, 0.0);
  cache_ms_.assign(n, 0.0);
  if (!fixed.tables.empty()) {
    const std::vector<DeviceShards> devices = device_shards(fixed, fixed_tables);
    const std::vector<DeviceUsage> usage = device_usage(fixed);
    const std::vector<DeviceCost> costs = score_plan(fixed, fixed_tables, model);
    std::vector<float> summary(size_);
    for (std::size_t r = 0; r < n; ++r) {
      for (const Table& piece : devices[r].pieces) {
        model.shard_summary(shard_features(piece, piece.dim), summary.data());
        for (std::size_t k = 0; k < size_; ++k) fixed_sum_[r][k] += summary[k];
      }
      fixed_count_[r] = static_cast<int>(devices[r].pieces.size());
      fixed_bytes_[r] = usage[r].memory_bytes;
      fixed_width_[r] = devices[r].dim_sum;
      fixed_ids_[r] = devices[r].input_ids;
      cache_ms_[r] = costs[r].cache_ms;
    }
    const DeviceShards& any = devices.front();
    fixed_collectives_ms_ = extra_collectives_ms(model, any.allreduce_bytes, any.row_wise_dim, cluster.num_devices,
                                                 any.host_row_wise_dim, any.devices_per_host);
    for (const TableSharding& t : fixed.tables) fixed_alltoall_types_.add(t.type);
    fixed_alltoall_types_ = fixed_alltoall_types_ & ShardingTypeSet::with_alltoalls();
  }
  collectives_ms_ = collectives_ms(0, 0);
  split_collectives_ms_ = collectives_ms_;
  sum_ = fixed_sum_;
  compute_.assign(n, 0.0);
  ids_ = fixed_ids_;
  bytes_ = fixed_bytes_;
  width_ = fixed_width_;
  for (std::size_t r = 0; r < n; ++r) rebuild(static_cast<int>(r));
}

int ReplanState::add(ReplanPiece piece) {
  const int i = num_pieces();
  const int r = piece.shard.rank;
  moved_bytes_ += charge(piece, r);
  if (pieces_per_table_.size() <= piece.table) pieces_per_table_.resize(piece.table + 1, 0);
  const int count = ++pieces_per_table_[piece.table];
  whole_tables_ += count == 1 ? 1 : count == 2 ? -1 : 0;
  split_tables_ += count == 2 ? 1 : 0;
  collectives_ms_ = collectives_ms(whole_tables_, split_tables_);
  split_collectives_ms_ = whole_tables_ > 0 ? collectives_ms(whole_tables_ - 1, split_tables_ + 1) : collectives_ms_;
  pieces_.push_back(std::move(piece));
  held_[static_cast<std::size_t>(r)].push_back(i);
  rebuild(r);
  return i;
}

bool ReplanState::holds_table(int r, std::size_t table, int except) const {
  const auto& on = held_[static_cast<std::size_t>(r)];
  return std::any_of(on.begin(), on.end(), [&](int k) { return k != except && piece(k).table == table; });
}

bool ReplanState::allowed(const PieceChange& c, const std::vector<Table>& tables) const {
  const ReplanPiece& a = piece(c.i);
  const int from = a.shard.rank;
  if (c.to == from || !tables[a.table].constraints.allows_rank(c.to)) return false;
  if (holds_table(c.to, a.table, c.j)) return false;
  if (c.split) return split_allowed(c, tables);
  const int64_t b_bytes = c.j >= 0 ? piece(c.j).bytes : 0;
  if (free_bytes(c.to) + b_bytes < a.bytes) return false;
  if (c.j < 0) return true;
  const ReplanPiece& b = piece(c.j);
  if (!tables[b.table].constraints.allows_rank(from) || holds_table(from, b.table, c.i)) return false;
  return free_bytes(from) + a.bytes >= b.bytes;
}

bool ReplanState::split_allowed(const PieceChange& c, const std::vector<Table>& tables) const {
  if (c.j < 0) return free_bytes(c.to) >= c.split->second.bytes;
  const ReplanPiece& b = piece(c.j);
  const int from = piece(c.i).shard.rank;
  if (c.evict_to < 0 || c.evict_to == from || c.evict_to == c.to) return false;
  if (!tables[b.table].constraints.allows_rank(c.evict_to) || holds_table(c.evict_to, b.table)) return false;
  return free_bytes(c.to) + b.bytes >= c.split->second.bytes && free_bytes(c.evict_to) >= b.bytes;
}

double ReplanState::compute_with(int r, const ReplanPiece* in, const ReplanPiece* out) const {
  const auto d = static_cast<std::size_t>(r);
  const int count = fixed_count_[d] + static_cast<int>(held_[d].size()) + (in ? 1 : 0) - (out ? 1 : 0);
  if (count <= 0) return 0.0;  // left empty
  thread_local std::vector<float> scratch;
  scratch = sum_[d];
  if (in)
    for (std::size_t k = 0; k < size_; ++k) scratch[k] += in->summary[k];
  if (out)
    for (std::size_t k = 0; k < size_; ++k) scratch[k] -= out->summary[k];
  return model_.compute_from_summary(scratch.data());
}

double ReplanState::collectives_ms(int whole, int split) const {
  ShardingTypeSet types = fixed_alltoall_types_;
  if (whole > 0) types.add(ShardingType::kTableWise);
  if (split > 0) types.add(ShardingType::kColumnWise);
  return fixed_collectives_ms_ + alltoall_groups_ms(model_, types.count(), num_devices());
}

double ReplanState::collectives_after_split(int i) const {
  return weigh_groups_ && pieces_per_table_[piece(i).table] == 1 ? split_collectives_ms_ : collectives_ms_;
}

bool ReplanState::split_adds_group() const { return split_collectives_ms_ > collectives_ms_; }

std::pair<double, double> ReplanState::after(std::initializer_list<Side> sides, double collectives_ms) const {
  thread_local std::vector<double> compute;
  thread_local std::vector<int64_t> width;
  thread_local std::vector<double> ids;
  compute = compute_;
  width = width_;
  ids = ids_;
  for (const Side& side : sides) {
    const auto d = static_cast<std::size_t>(side.device);
    compute[d] = compute_with(side.device, side.in, side.out);
    width[d] += (side.in ? side.in->shard.cols : 0) - (side.out ? side.out->shard.cols : 0);
    ids[d] += (side.in ? side.in->ids : 0.0) - (side.out ? side.out->ids : 0.0);
  }
  return {max_total_from_compute(model_, compute, width, ids, collectives_ms, &cache_ms_), top_sum(compute)};
}

double ReplanState::max_total_ms() const {
  return max_total_from_compute(model_, compute_, width_, ids_, collectives_ms_, &cache_ms_);
}

double ReplanState::top_sum(std::vector<double> compute) {
  const auto k = std::min<std::size_t>(compute.size(), kTopDevices);
  std::partial_sort(compute.begin(), compute.begin() + static_cast<std::ptrdiff_t>(k), compute.end(), std::greater<>());
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i) sum += compute[i];
  return sum;
}

std::vector<DeviceCost> ReplanState::costs() const {
  return costs_from_compute(model_, compute_, width_, ids_, collectives_ms_, &cache_ms_);
}

void ReplanState::evaluate(PieceChange& c) const {
  const ReplanPiece& a = piece(c.i);
  const int from = a.shard.rank;
  if (c.split) {
    const ReplanPiece& first = c.split->first;
    const ReplanPiece& second = c.split->second;
    c.budget_delta = charge(first, from) + charge(second, c.to) - charge(a, from);
    const double collectives = collectives_after_split(c.i);
    if (c.j < 0) {
      std::tie(c.max_ms, c.top_compute_ms) = after({{from, &first, &a}, {c.to, &second, nullptr}}, collectives);
      return;
    }
    const ReplanPiece& b = piece(c.j);
    std::tie(c.max_ms, c.top_compute_ms) =
        after({{from, &first, &a}, {c.to, &second, &b}, {c.evict_to, &b, nullptr}}, collectives);
    c.budget_delta += charge(b, c.evict_to) - charge(b, c.to);
    return;
  }
  const ReplanPiece* b = c.j >= 0 ? &piece(c.j) : nullptr;
  std::tie(c.max_ms, c.top_compute_ms) = after({{from, b, &a}, {c.to, &a, b}}, collectives_ms_);
  c.budget_delta = charge(a, c.to) - charge(a, from);
  if (b) c.budget_delta += charge(*b, from) - charge(*b, c.to);
}

// The group a new table's piece may add is the same on every device, so it is left out.
double ReplanState::max_with(const ReplanPiece& p, int r) const {
  return after({{r, &p, nullptr}}, collectives_ms_).first;
}

void ReplanState::place(int i, int to) {
  ReplanPiece& p = pieces_[static_cast<std::size_t>(i)];
  const int from = p.shard.rank;
  moved_bytes_ += charge(p, to) - charge(p, from);
  auto& source = held_[static_cast<std::size_t>(from)];
  source.erase(std::find(source.begin(), source.end(), i));
  auto& target = held_[static_cast<std::size_t>(to)];
  target.insert(std::upper_bound(target.begin(), target.end(), i), i);
  p.shard.rank = to;
  rebuild(from);
  rebuild(to);
}

int ReplanState::apply(const PieceChange& c) {
  const int from = piece(c.i).shard.rank;
  if (c.split) {
    ReplanPiece& a = pieces_[static_cast<std::size_t>(c.i)];
    moved_bytes_ -= charge(a, from);
    a = c.split->first;
    moved_bytes_ += charge(a, from);
    rebuild(from);
    if (c.j >= 0) place(c.j, c.evict_to);
    ReplanPiece second = c.split->second;
    second.shard.rank = c.to;
    return add(std::move(second));
  }
  place(c.i, c.to);
  if (c.j >= 0) place(c.j, from);
  return -1;
}

// From the device's pieces, so accepted changes leave no rounding drift behind.
void ReplanState::rebuild(int r) {
  const auto d = static_cast<std::size_t>(r);
  sum_[d] = fixed_sum_[d];
  bytes_[d] = fixed_bytes_[d];
  width_[d] = fixed_width_[d];
  ids_[d] = fixed_ids_[d];
  for (int i : held_[d]) {
    const ReplanPiece& p = piece(i);
    for (std::size_t k = 0; k < size_; ++k) sum_[d][k] += p.summary[k];
    bytes_[d] += p.bytes;
    width_[d] += p.shard.cols;
    ids_[d] += p.ids;
  }
  compute_[d] = fixed_count_[d] + held_[d].size() == 0 ? 0.0 : model_.compute_from_summary(sum_[d].data());
}

}  // namespace shardplan
