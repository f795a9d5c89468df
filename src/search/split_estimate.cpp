#include "split_estimate.hpp"

#include <limits>

namespace shardplan {

SplitEstimator::SplitEstimator(const std::vector<Piece>& pieces, const Placement& placement,
                               const ShardCatalog& catalog, const CostModel& model, int64_t usable_bytes)
    : pieces_(pieces),
      placement_(placement),
      catalog_(catalog),
      model_(model),
      usable_bytes_(usable_bytes),
      table_devices_(static_cast<std::size_t>(catalog.num_tables())) {
  const auto devices = static_cast<int>(placement.devices.size());
  loads_.reset(devices, catalog.summary_size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const int r = placement.ranks[i];
    loads_.add(static_cast<std::size_t>(r), catalog, pieces[i].variant);
    table_devices_[static_cast<std::size_t>(catalog.table(pieces[i].variant))].push_back(r);
  }
  index_.reset(devices);
  compute_.resize(placement.devices.size());
  for (std::size_t r = 0; r < placement.devices.size(); ++r) {
    compute_[r] = placement.devices[r].compute_ms;
    index_.update(static_cast<int>(r), compute_[r], loads_.bytes[r], loads_.width[r]);
  }
}

double SplitEstimator::after_split(std::size_t i) const {
  const int v = pieces_[i].variant;
  const int stays = catalog_.first_half(v);
  const int moves = catalog_.second_half(v);
  const auto from = static_cast<std::size_t>(placement_.ranks[i]);
  const auto& holders = table_devices_[static_cast<std::size_t>(catalog_.table(v))];
  const int to = index_.first(usable_bytes_ - catalog_.bytes(moves), &holders);
  if (to < 0) return std::numeric_limits<double>::infinity();
  const auto width = loads_.summary_size;
  const auto tu = static_cast<std::size_t>(to);
  std::vector<float> sum(loads_.sum(from), loads_.sum(from) + width);
  const float* whole = catalog_.summary(v);
  const float* kept = catalog_.summary(stays);
  const float* moved = catalog_.summary(moves);
  for (std::size_t k = 0; k < width; ++k) sum[k] += kept[k] - whole[k];
  std::vector<double> compute = compute_;
  std::vector<int64_t> widths = loads_.width;
  std::vector<double> ids = loads_.ids;
  compute[from] = model_.compute_from_summary(sum.data());
  sum.assign(loads_.sum(tu), loads_.sum(tu) + width);
  for (std::size_t k = 0; k < width; ++k) sum[k] += moved[k];
  compute[tu] = model_.compute_from_summary(sum.data());
  widths[from] -= catalog_.cols(moves);
  widths[tu] += catalog_.cols(moves);
  ids[tu] += catalog_.input_ids(moves);  // the piece that stays still receives every id
  return max_total_from_compute(model_, compute, widths, ids);
}

}  // namespace shardplan
