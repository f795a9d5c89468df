#pragma once
// Row-wise tables' two extra collectives as measured. The comm model scores a row-wise table as its full
// width in every GPU's all-to-all (the same bytes as its reduce-scatter); what TorchRec's separate
// reduce-scatter and all-gather add beyond that is charged to every GPU apart (extra_collectives_ms).
// Per measured world size W, that extra is fitted to pairs of `collect-costs comm` samples
// (tools/rowwise-workloads): one runs a row-wise width through its own collectives, the other carries
// the same width in its all-to-all. A line in the row-wise width (at the data's batch), intercept and
// slope >= 0, robust to outliers. Between measured world sizes both figures are linear in W; beyond them
// the nearest size's line holds, its intercept scaled by (W - 1) / (W_fit - 1), since each collective is
// W - 1 steps.
// No LibTorch here.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {

struct RowwiseFitPoint {
  int world_size = 0;
  double latency_ms = 0.0;     // >= 0: the two collectives' start-up, whatever the width
  double ms_per_column = 0.0;  // >= 0: per unit of summed row-wise width
  int pairs = 0;
};

struct RowwiseFit {
  std::vector<RowwiseFitPoint> points;  // by world size, ascending; empty: not measured
};

// A row-wise sample and what its collectives added: its step (mean over ranks of forward plus backward)
// minus that of the samples carrying its width in the all-to-all instead.
struct RowwisePair {
  int world_size = 0;
  int64_t rw_dim = 0;
  double extra_ms = 0.0;
};

// Pairs every sample with rw_dim > 0 with the sample next to it (before or after: the pair's workloads
// were given one after the other) of the same world size, host layout and start delays (within 0.05 ms),
// without rw_dim or an all-reduce, whose widths are its widths plus rw_dim on every rank. Samples with
// no partner are left out. `is_reference`, when given, is set per sample: 1 for those used as a partner.

std::vector<RowwisePair> rowwise_pairs(const std::vector<CommSample>& samples,
                                       std::vector<char>* is_reference = nullptr);

// Per world size, the least-absolute-deviations line through its pairs' (rw_dim, extra_ms) with intercept
// >= 0 and slope >= 0, exact.
RowwiseFit fit_rowwise(const std::vector<RowwisePair>& pairs);

// The fitted extra of `rw_dim` summed row-wise width on `num_devices` GPUs; 0 for one GPU or no width.
// `fit` must not be empty.
double fitted_rowwise_ms(const RowwiseFit& fit, int64_t rw_dim, int num_devices);

nlohmann::json rowwise_fit_to_json(const RowwiseFit& fit);
// Throws InputError naming `source` and the field.
RowwiseFit rowwise_fit_from_json(const nlohmann::json& doc, const std::string& source, const std::string& path);

}  // namespace shardplan
