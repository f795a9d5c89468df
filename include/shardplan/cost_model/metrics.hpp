#pragma once
// Accuracy metrics of a cost model's predictions against measurements: plain arithmetic, no LibTorch.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace shardplan {

struct Metrics {
  double mse = 0.0;           // in ms^2
  double mape = 0.0;          // mean absolute percentage error, in percent
  double spearman = 0.0;      // rank correlation of predicted and measured
  double median_ratio = 0.0;  // median of predicted over measured: a bias MAPE alone does not show
  int64_t count = 0;
  nlohmann::json to_json() const;
};

Metrics compute_metrics(const std::vector<double>& predicted, const std::vector<double>& measured);

// How an all-to-all's slowest device responds to width imbalance, the trade the search makes: over
// samples of one world size, log(slowest ms) = a + b log(total width) + c log(widest / mean width) by
// least squares. Fitted to measured and to predicted times of the same samples, c says how much a plan
// gains by balancing widths, as the hardware and as the model see it (docs/cost-models.md).
struct ImbalanceResponse {
  double total_width_exponent = 0.0;  // b
  double imbalance_exponent = 0.0;    // c
  int64_t count = 0;                  // samples used (none with a total width of 0)
};
// Empty when fewer than 3 samples could be used or their widths never vary in total or in balance.
std::optional<ImbalanceResponse> imbalance_response(const std::vector<std::vector<int64_t>>& dim_sums,
                                                    const std::vector<double>& slowest_ms);
double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace shardplan
