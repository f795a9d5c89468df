#pragma once
// A placement as replanning changes it: the movable pieces (table- and column-wise shards in HBM), what
// the other shards leave fixed on each device, and what moving pieces costs in predicted time and in
// bytes moved from where the old plan had them.
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

struct ReplanPiece {
  std::size_t table = 0;  // index in the tables (and the new plan)
  Shard shard;            // rank: where it lies now
  int home = -1;          // the old plan's rank; -1: a new or rebuilt table's piece, free to move
  bool reshaped = false;  // split from an old shard: rebuilt wherever it lies, so it always costs its bytes
  std::vector<float> summary;
  int64_t bytes = 0;
  double ids = 0.0;
};

// A piece's column halves: the first stays on its device, the second goes to another.
struct SplitHalves {
  ReplanPiece first;
  ReplanPiece second;
};

// One move (j < 0) of piece i to device `to`, a swap with piece j, which lies on `to`, or (split set) a
// split of piece i whose second half goes to `to`, which piece j (when set) leaves for `evict_to` to make
// the half worth its place.
struct PieceChange {
  int i = -1;
  int j = -1;
  int to = 0;
  const SplitHalves* split = nullptr;
  int evict_to = -1;
  double max_ms = 0.0;          // the plan's predicted maximum after it
  double top_compute_ms = 0.0;  // and its largest computes summed (top_compute_ms)
  int64_t budget_delta = 0;     // its change to the bytes moved from the old placement
};

class ReplanState {
 public:
  // `fixed`: the tables no move touches (row-wise, data-parallel, cached), with their tables.
  ReplanState(const CostModel& model, const Cluster& cluster, const Plan& fixed,
              const std::vector<Table>& fixed_tables);

  // Adds a piece where its shard's rank says; returns its index.
  int add(ReplanPiece piece);

  const ReplanPiece& piece(int i) const { return pieces_[static_cast<std::size_t>(i)]; }
  int num_pieces() const { return static_cast<int>(pieces_.size()); }
  int num_devices() const { return static_cast<int>(held_.size()); }
  const std::vector<int>& held(int r) const { return held_[static_cast<std::size_t>(r)]; }
  int64_t free_bytes(int r) const { return usable_ - bytes_[static_cast<std::size_t>(r)]; }
  int64_t moved_bytes() const { return moved_bytes_; }

  // Whether device r holds a piece of `table` other than piece `except`.
  bool holds_table(int r, std::size_t table, int except = -1) const;
  // Whether the change keeps both devices within memory, the tables' pieces apart and pins honoured.
  bool allowed(const PieceChange& change, const std::vector<Table>& tables) const;

  double max_total_ms() const;
  // The kTopDevices largest computes, summed: lower when a change relieves one of several devices that
  // tie for the maximum, which no single change lowers (every device waits for the slowest in the
  // all-to-all), so that the next change may lower it.
  static constexpr int kTopDevices = 4;
  double top_compute_ms() const { return top_sum(compute_); }
  static double top_sum(std::vector<double> compute);
  std::vector<DeviceCost> costs() const;
  // The plan's maximum after the change, and its change to the bytes moved; fills change.max_ms and
  // change.budget_delta. Thread-safe (reads only).
  void evaluate(PieceChange& change) const;
  // The maximum with piece `p` (not yet added) on device r.
  double max_with(const ReplanPiece& p, int r) const;
  // Returns the index of a split's second half (-1 for a move or swap).
  int apply(const PieceChange& change);
  // Whether a split now would add the column-wise group of all-to-alls (no table is column-wise yet).
  bool split_adds_group() const;
  // Whether evaluate charges a split with the group it adds (default); the plan's score always does.
  void weigh_groups(bool weigh) { weigh_groups_ = weigh; }

 private:
  void rebuild(int r);
  bool split_allowed(const PieceChange& change, const std::vector<Table>& tables) const;
  int64_t charge(const ReplanPiece& p, int rank) const {
    return p.home >= 0 && (p.reshaped || rank != p.home) ? p.bytes : 0;
  }
  void place(int i, int to);
  // One device's side of a change: `in` joins it, `out` leaves it (either may be null).
  struct Side {
    int device;
    const ReplanPiece* in;
    const ReplanPiece* out;
  };
  double compute_with(int r, const ReplanPiece* in, const ReplanPiece* out) const;
  // The plan's maximum and top_compute_ms with the sides applied.
  std::pair<double, double> after(std::initializer_list<Side> sides, double collectives_ms) const;
  // The collectives with `whole` movable tables in one piece (table-wise) and `split` in several
  // (column-wise): TorchRec runs each sharding type's all-to-alls apart, so a type's first table adds a group.
  double collectives_ms(int whole, int split) const;
  // The collectives once piece i's table is in one more piece.
  double collectives_after_split(int i) const;

  const CostModel& model_;
  int64_t usable_ = 0;
  std::size_t size_ = 0;  // the model's summary size
  std::vector<ReplanPiece> pieces_;
  std::vector<std::vector<int>> held_;
  std::vector<std::vector<float>> fixed_sum_;
  std::vector<int64_t> fixed_bytes_, fixed_width_;
  std::vector<int> fixed_count_;
  std::vector<double> fixed_ids_;
  std::vector<std::vector<float>> sum_;
  std::vector<double> compute_, ids_;
  std::vector<int64_t> bytes_, width_;
  ShardingTypeSet fixed_alltoall_types_;  // the fixed tables' types with all-to-alls of their own
  double fixed_collectives_ms_ = 0.0;     // the all-reduces and row-wise collectives the fixed tables add
  std::vector<int> pieces_per_table_;
  int whole_tables_ = 0, split_tables_ = 0;
  double collectives_ms_ = 0.0;        // as the placement stands
  double split_collectives_ms_ = 0.0;  // once one more table is split: what a split's candidates are scored with
  bool weigh_groups_ = true;
  std::vector<double> cache_ms_;
  int64_t moved_bytes_ = 0;
};

}  // namespace shardplan
