#pragma once
// What pre-training and calibration share: data splits, input standardisation, the Adam loop with early
// stopping, and the compute model's batches. LibTorch; internal to shardplan_torch.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/cost_model/cost_features.hpp"
#include "shardplan/cost_model/neural_cost_model.hpp"

namespace shardplan::training {

struct Split {
  std::vector<std::size_t> train, validation, test;
};

// A seeded shuffle of [0, n) cut into test, validation and the rest for training. Throws InputError when
// n is too small to leave training samples.
Split split_indices(std::size_t n, double validation_fraction, double test_fraction, uint64_t seed, uint64_t stream);

// Mean and standard deviation of each column; constant columns get std 1 so they pass through as 0.
template <std::size_t N>
Normaliser fit_normaliser(const std::vector<std::array<float, N>>& rows) {
  Normaliser norm;
  norm.mean.assign(N, 0.0f);
  norm.std.assign(N, 1.0f);
  std::array<double, N> sum{};
  std::array<double, N> sq{};
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < N; ++i) {
      sum[i] += r[i];
      sq[i] += static_cast<double>(r[i]) * r[i];
    }
  }
  double n = std::max<double>(1.0, static_cast<double>(rows.size()));
  for (std::size_t i = 0; i < N; ++i) {
    double mean = sum[i] / n;
    double var = std::max(0.0, sq[i] / n - mean * mean);
    norm.mean[i] = static_cast<float>(mean);
    norm.std[i] = var > 1e-12 ? static_cast<float>(std::sqrt(var)) : 1.0f;
  }
  return norm;
}

template <std::size_t N>
torch::Tensor normalised_tensor(const std::vector<const std::array<float, N>*>& rows, const Normaliser& norm) {
  torch::Tensor x = torch::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(N)});
  float* p = x.data_ptr<float>();
  for (const auto* r : rows) {
    for (std::size_t i = 0; i < N; ++i) *p++ = ((*r)[i] - norm.mean[i]) / norm.std[i];
  }
  return x;
}

struct TrainSettings {
  int epochs = 300;
  int patience = 30;
  double learning_rate = 1e-3;
  int batch_size = 64;
  uint64_t seed = 0;
  bool quiet = false;
  double time_limit_seconds = 0.0;  // > 0: stop after the epoch that crosses it (best weights kept)
};

struct TrainOutcome {
  int epochs_run = 0;
  int best_epoch = 0;  // 0: no epoch beat the starting weights (only when start_validation_loss is given)
  double best_validation_loss = 0.0;
  bool stopped_by_time = false;
};

// Adam with early stopping on the validation loss; the best validation weights are restored at the end.
// With a finite `start_validation_loss` (fine-tuning), the starting weights count as epoch 0 and are kept
// when no epoch beats them.
template <typename Module, typename LossFn>
TrainOutcome train(Module& module, std::size_t train_size, const LossFn& loss_of_batch,
                   const std::function<double()>& validation_loss, const TrainSettings& settings,
                   const std::string& what, uint64_t shuffle_stream,
                   double start_validation_loss = std::numeric_limits<double>::infinity()) {
  torch::optim::Adam optimizer(module->parameters(), torch::optim::AdamOptions(settings.learning_rate));
  std::vector<std::size_t> order(train_size);
  for (std::size_t i = 0; i < train_size; ++i) order[i] = i;
  Rng rng(derive_seed(settings.seed, shuffle_stream));
  TrainOutcome outcome;
  outcome.best_validation_loss = start_validation_loss;
  std::vector<torch::Tensor> best;
  if (std::isfinite(start_validation_loss)) {
    torch::NoGradGuard no_grad;
    for (const auto& p : module->parameters()) best.push_back(p.detach().clone());
  }
  const auto started = std::chrono::steady_clock::now();
  Progress progress(what + " epochs", settings.epochs, 0, settings.quiet);
  for (int epoch = 1; epoch <= settings.epochs; ++epoch) {
    rng.shuffle(order);
    module->train();
    double train_loss = 0.0;
    std::size_t batches = 0;
    for (std::size_t start = 0; start < order.size(); start += static_cast<std::size_t>(settings.batch_size)) {
      std::size_t end = std::min(order.size(), start + static_cast<std::size_t>(settings.batch_size));
      std::vector<std::size_t> batch(order.begin() + static_cast<std::ptrdiff_t>(start),
                                     order.begin() + static_cast<std::ptrdiff_t>(end));
      optimizer.zero_grad();
      torch::Tensor loss = loss_of_batch(batch);
      loss.backward();
      optimizer.step();
      train_loss += loss.item<double>();
      ++batches;
    }
    module->eval();
    double val = validation_loss();
    outcome.epochs_run = epoch;
    if (val < outcome.best_validation_loss) {
      outcome.best_validation_loss = val;
      outcome.best_epoch = epoch;
      torch::NoGradGuard no_grad;
      best.clear();
      for (const auto& p : module->parameters()) best.push_back(p.detach().clone());
    }
    progress.update(epoch, fmt::format("train {:.4f} val {:.4f} (best {:.4f} @{})",
                                       train_loss / static_cast<double>(std::max<std::size_t>(1, batches)), val,
                                       outcome.best_validation_loss, outcome.best_epoch));
    if (epoch - outcome.best_epoch >= settings.patience) break;
    if (settings.time_limit_seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >=
            settings.time_limit_seconds) {
      outcome.stopped_by_time = true;
      break;
    }
  }
  progress.finish();
  torch::NoGradGuard no_grad;
  auto params = module->parameters();
  for (std::size_t i = 0; i < params.size() && i < best.size(); ++i) params[i].copy_(best[i]);
  spdlog::info("{}: {} epochs{}, best validation loss {:.5f} at epoch {}", what, outcome.epochs_run,
               outcome.stopped_by_time ? " (time limit)" : "", outcome.best_validation_loss, outcome.best_epoch);
  return outcome;
}

// ---- the compute model's data ----

struct ComputeSet {
  std::vector<std::vector<ComputeFeatureVector>> shards;  // per sample
  std::vector<double> latency_ms;                         // per sample, by the set's latency statistic
};

using LatencyStatistic = double (*)(const ComputeSample&);
// Pretraining learns the undisturbed latency (fastest timed step); calibration the typical one.
ComputeSet compute_set(const std::vector<ComputeSample>& samples, LatencyStatistic latency = undisturbed_latency_ms);

struct ComputeBatch {
  torch::Tensor x, device, target;
  int64_t devices;
};

ComputeBatch compute_batch(const ComputeSet& set, const std::vector<std::size_t>& samples, const Normaliser& norm);

// Compute samples whose timed iterations spread (max - min) over `max_spread` of their median were
// disturbed by other work; removes them (max_spread <= 0 keeps all) and returns how many went.
std::size_t drop_disturbed(std::vector<ComputeSample>& samples, double max_spread);

template <typename T>
std::vector<T> pick(const std::vector<T>& values, const std::vector<std::size_t>& ids) {
  std::vector<T> out;
  out.reserve(ids.size());
  for (std::size_t i : ids) out.push_back(values[i]);
  return out;
}

// Provenance fields of a cost-data meta.json worth keeping in a model's meta.
nlohmann::json data_provenance(const nlohmann::json& meta);

}  // namespace shardplan::training
