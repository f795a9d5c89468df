#pragma once
// Every piece the search can make of every table (the whole table and its repeated halvings while the
// width stays a multiple of 4), with what the placement needs of each, computed once: the cost model's
// summary vector, the predicted cost of the piece alone, its memory. The search then never calls the
// per-shard network again: a device's cost is the model's head over the sum of its pieces' summaries.
#include <cstdint>
#include <vector>

#include "shardplan/cluster.hpp"
#include "shardplan/cost_model.hpp"
#include "shardplan/table.hpp"

namespace shardplan {

class ShardCatalog {
 public:
  ShardCatalog(const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model, int threads);

  // Variant ids: table t's whole-table variant is whole(t); half(v) is v's half (when splittable(v)).
  int whole(int table) const { return first_variant_[static_cast<std::size_t>(table)]; }
  bool splittable(int v) const { return cols(v) % 8 == 0; }
  int half(int v) const { return v + 1; }

  int table(int v) const { return variants_[static_cast<std::size_t>(v)].table; }
  int cols(int v) const { return variants_[static_cast<std::size_t>(v)].cols; }
  int64_t bytes(int v) const { return variants_[static_cast<std::size_t>(v)].bytes; }
  double alone_cost(int v) const { return variants_[static_cast<std::size_t>(v)].alone_cost; }
  const float* summary(int v) const { return summaries_.data() + static_cast<std::size_t>(v) * summary_size_; }
  int summary_size() const { return static_cast<int>(summary_size_); }
  int num_tables() const { return static_cast<int>(first_variant_.size()); }

 private:
  struct Variant {
    int table = 0;
    int cols = 0;
    int64_t bytes = 0;
    double alone_cost = 0.0;
  };
  std::vector<Variant> variants_;
  std::vector<int> first_variant_;
  std::size_t summary_size_ = 0;
  std::vector<float> summaries_;
};

}  // namespace shardplan
