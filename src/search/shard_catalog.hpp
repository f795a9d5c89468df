#pragma once
// Every piece the search can make of every table (the whole table and its repeated halvings, every piece
// a multiple of 4 columns), with what the placement needs of each, computed once: the cost model's
// summary vector, the predicted cost of the piece alone, its memory. The search then never calls the
// per-shard network again: a device's cost is the model's head over the sum of its pieces' summaries.
#include <cstdint>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

class ShardCatalog {
 public:
  // `allowed`: the plan's sharding types; a table that may not be column-wise (by them or its own
  // constraints) has only its whole variant.
  ShardCatalog(const std::vector<Table>& tables, const Cluster& cluster, const CostModel& model, int threads,
               ShardingTypeSet allowed = ShardingTypeSet::all());

  // The two pieces a halving makes of `cols` columns: the wider first, both multiples of 4 (108 -> 56 + 52,
  // 64 -> 32 + 32). Only widths of at least 8 columns halve.
  static int first_half_cols(int cols) { return cols - second_half_cols(cols); }
  static int second_half_cols(int cols) { return 4 * (cols / 8); }

  // Variant ids: table t's whole-table variant is whole(t); a splittable v halves into first_half(v) (the
  // lower columns) and second_half(v).
  int whole(int table) const { return first_variant_[static_cast<std::size_t>(table)]; }
  bool splittable(int v) const { return variant(v).first_half >= 0; }
  int first_half(int v) const { return variant(v).first_half; }
  int second_half(int v) const { return variant(v).second_half; }

  int table(int v) const { return variant(v).table; }
  int cols(int v) const { return variant(v).cols; }
  int64_t bytes(int v) const { return variant(v).bytes; }
  double alone_cost(int v) const { return variant(v).alone_cost; }
  // The ids per sample a piece of v receives in the input all-to-all: every piece of a table all of its ids.
  double input_ids(int v) const { return input_ids_[static_cast<std::size_t>(table(v))]; }
  const float* summary(int v) const { return summaries_.data() + static_cast<std::size_t>(v) * summary_size_; }
  int summary_size() const { return static_cast<int>(summary_size_); }
  int num_tables() const { return static_cast<int>(first_variant_.size()); }
  // The ranks table t's pieces must lie on (its pinned ranks; empty: any), and whether v may go to rank.
  const std::vector<int>& pinned(int table) const { return constraints_[static_cast<std::size_t>(table)].ranks; }
  bool allows_rank(int v, int rank) const { return constraints_[static_cast<std::size_t>(table(v))].allows_rank(rank); }
  // The greedy placement's order of variants as one integer: costliest alone first, then the larger, then
  // by table. Variants that order cannot tell apart share a rank (their pieces then go by column offset).
  int placement_rank(int v) const { return placement_rank_[static_cast<std::size_t>(v)]; }

 private:
  struct Variant {
    int table = 0;
    int cols = 0;
    int64_t bytes = 0;
    double alone_cost = 0.0;
    int first_half = -1;  // -1: too narrow to halve
    int second_half = -1;
  };
  const Variant& variant(int v) const { return variants_[static_cast<std::size_t>(v)]; }

  std::vector<Variant> variants_;
  std::vector<int> first_variant_;
  std::size_t summary_size_ = 0;
  std::vector<float> summaries_;
  std::vector<int> placement_rank_;
  std::vector<TableConstraints> constraints_;  // per table
  std::vector<double> input_ids_;              // per table
};

}  // namespace shardplan
