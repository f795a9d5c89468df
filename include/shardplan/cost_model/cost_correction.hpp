#pragma once
// A cost model corrected by measurements of this machine (measured-in-the-loop planning): every device's
// compute is scaled by a factor for the machine, and each table's share of it by a factor of its own,
// fitted by ridge regression on the log ratio of measured to predicted compute of measured shard sets.
// Why tables, not sets: the search tries thousands of sets it will never measure; a correction of a
// set reaches no other set, while a table's carries to every set holding it. Why not fine-tuning: it
// needs LibTorch in the search and far more than the handful of sets measured while planning.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "shardplan/cost_model/cost_model.hpp"

namespace shardplan {

// A measured shard set: its shards as the model sees them and its measured compute in ms.
struct CorrectionObservation {
  std::vector<ShardFeatures> shards;
  double measured_ms = 0.0;
};

struct CostCorrection {
  double scale = 1.0;                      // every device's compute
  std::map<uint64_t, double> table_scale;  // by table_key: a shard's latency alone
  int observations = 0;
};

// Identifies a table by what the model sees of it besides its width (rows, pooling, reuse), so every
// column piece of it shares one factor.
uint64_t table_key(const ShardFeatures& shard);

// Fits the correction: log(measured / predicted) = log(scale) + sum over the set's tables of their share
// of its predicted latency alone x log(table factor), least squares with a ridge penalty `ridge` on the
// table terms (none on the scale), so one set moves its tables' factors only part of the way.
CostCorrection fit_cost_correction(const CostModel& base, const std::vector<CorrectionObservation>& observations,
                                   double ridge = 0.5);

// The base model with the correction applied to compute (comm unchanged, fed the corrected compute).
std::shared_ptr<const CostModel> make_corrected_model(std::shared_ptr<const CostModel> base, CostCorrection correction);

}  // namespace shardplan
