#pragma once
// Pre-training the neural cost models on measured cost data (LibTorch); their metrics are metrics.hpp's.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/cost_model/metrics.hpp"

namespace shardplan {

struct PretrainConfig {
  std::string data_dir;  // cost data: compute and comm directories at or below it
  std::string out_dir;   // the model directory to write
  // A model directory whose communication part the new model keeps (compute-only data: a single GPU
  // cannot time all-to-alls). Empty: the comm model is trained on the data's comm samples.
  std::string comm_from;
  // The all-to-all structure's hardware profile (a name or a file); empty: its figures are fitted to the
  // comm data (fabric_fit.hpp).
  std::string hardware;
  int epochs = 300;   // at most; early stopping usually ends sooner
  int patience = 30;  // epochs without a better validation loss before stopping
  double learning_rate = 1e-3;
  int batch_size = 64;  // samples (devices) per step
  uint64_t seed = 0;
  int threads = 1;
  double validation_fraction = 0.1;
  double test_fraction = 0.1;
  // Compute samples whose timed iterations spread (max - min) by more than this share of their median
  // were disturbed by other work on the machine; they are left out (<= 0 keeps every sample).
  double max_iteration_spread = 0.3;
  int holdout_world_size = 0;  // 0: the middle collected world size, when at least three were collected
  // How far the compute head may scale a device's summed shard latencies: by exp(+-range). Kept small
  // because the search seeks out whatever sets the model discounts: with 1.0 (a factor down to 0.37)
  // its plans measured slower than the baselines' (docs/cost-models.md).
  double interaction_range = 0.25;
  bool quiet = false;
  std::string command_line;
};

// Trains, keeps the best-validation weights, evaluates on the test split and writes the model
// directory. Returns meta.json's content (with the test metrics).
nlohmann::json pretrain_cost_models(const PretrainConfig& config);

// Metrics of a model on a data directory: {"compute": {...}, "comm": {"fw": ..., "bw": ...}} for the
// kinds of data present. With a hardware profile, the all-to-alls are scored for its links (as planning
// with --hardware does) and "comm_structure_alone" gives the profile's structure on its own.
nlohmann::json evaluate_cost_model(const std::string& model_dir, const std::string& data_dir,
                                   const std::string& hardware = "");

}  // namespace shardplan
