#include "shard_catalog.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "shardplan/core/plan.hpp"
#include "shardplan/search/parallel_for.hpp"

namespace shardplan {

ShardCatalog::ShardCatalog(const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model,
                           int threads, ShardingTypeSet allowed)
    : summary_size_(static_cast<std::size_t>(model.summary_size())) {
  first_variant_.reserve(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    first_variant_.push_back(static_cast<int>(variants_.size()));
    constraints_.push_back(tables[t].constraints);
    input_ids_.push_back(input_ids_per_sample(tables[t]));
    const bool may_split = table_sharding_types(tables[t], allowed).allows(ShardingType::kColumnWise);
    // Each width a table's halvings reach, once: a width halves unevenly when its half is not a multiple
    // of 4 (108 -> 56 + 52), so a table of 4 (mod 8) columns can be split too. Widths only shrink, so
    // visiting them widest first finds every half's width already listed or about to be.
    std::map<int, int, std::greater<>> variant_of;  // width -> variant id
    auto add = [&](int cols) {
      auto [at, added] = variant_of.emplace(cols, static_cast<int>(variants_.size()));
      if (added) {
        variants_.push_back(Variant{static_cast<int>(t), cols,
                                    shard_memory_bytes(tables[t].rows, cols, tables[t].dtype, cluster.optimizer), 0.0});
      }
      return at->second;
    };
    add(tables[t].dim);
    for (auto it = variant_of.begin(); it != variant_of.end(); ++it) {
      const int cols = it->first;
      if (cols < 8 || !may_split) continue;
      const int first = add(first_half_cols(cols));
      const int second = add(second_half_cols(cols));
      Variant& v = variants_[static_cast<std::size_t>(it->second)];
      v.first_half = first;
      v.second_half = second;
    }
  }
  summaries_.resize(variants_.size() * summary_size_);
  parallel_for(static_cast<int>(variants_.size()), threads, [&](int v) {
    Variant& variant = variants_[static_cast<std::size_t>(v)];
    float* summary = summaries_.data() + static_cast<std::size_t>(v) * summary_size_;
    model.shard_summary(shard_features(tables[static_cast<std::size_t>(variant.table)], variant.cols), summary);
    variant.alone_cost = model.compute_from_summary(summary);
  });
  // In order, so the table named is the same whatever the threads did.
  for (const Variant& variant : variants_) {
    const Table& table = tables[static_cast<std::size_t>(variant.table)];
    refuse_unscorable(model, table, variant.cols, variant.alone_cost);
  }
  // Placements sort their pieces by this order thousands of times; comparing one integer is cheaper.
  auto before = [this](int a, int b) {
    const Variant& va = variant(a);
    const Variant& vb = variant(b);
    if (va.alone_cost != vb.alone_cost) return va.alone_cost > vb.alone_cost;
    if (va.bytes != vb.bytes) return va.bytes > vb.bytes;
    return va.table < vb.table;
  };
  std::vector<int> by_order(variants_.size());
  std::iota(by_order.begin(), by_order.end(), 0);
  std::stable_sort(by_order.begin(), by_order.end(), before);
  placement_rank_.assign(variants_.size(), 0);
  for (std::size_t i = 1; i < by_order.size(); ++i) {
    const bool tied = !before(by_order[i - 1], by_order[i]);
    placement_rank_[static_cast<std::size_t>(by_order[i])] =
        placement_rank_[static_cast<std::size_t>(by_order[i - 1])] + (tied ? 0 : 1);
  }
}

}  // namespace shardplan
