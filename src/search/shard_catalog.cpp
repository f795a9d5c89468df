#include "shard_catalog.hpp"

#include "parallel_for.hpp"

namespace shardplan {

ShardCatalog::ShardCatalog(const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model,
                           int threads)
    : summary_size_(static_cast<std::size_t>(model.summary_size())) {
  first_variant_.reserve(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    first_variant_.push_back(static_cast<int>(variants_.size()));
    // dim, dim/2, ... : each halving needs the half to stay a multiple of 4.
    for (int cols = tables[t].dim;; cols /= 2) {
      variants_.push_back(Variant{static_cast<int>(t), cols,
                                  shard_memory_bytes(tables[t].rows, cols, tables[t].dtype, cluster.optimizer), 0.0});
      if (cols % 8 != 0) break;
    }
  }
  summaries_.resize(variants_.size() * summary_size_);
  parallel_for(static_cast<int>(variants_.size()), threads, [&](int v) {
    Variant& variant = variants_[static_cast<std::size_t>(v)];
    float* summary = summaries_.data() + static_cast<std::size_t>(v) * summary_size_;
    model.shard_summary(shard_features(tables[static_cast<std::size_t>(variant.table)], variant.cols), summary);
    variant.alone_cost = model.compute_from_summary(summary);
  });
}

}  // namespace shardplan
