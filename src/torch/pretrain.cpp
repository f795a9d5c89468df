// Pre-training the compute and communication cost models with LibTorch (method.md, "Pre-train").
#include "shardplan/pretrain.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "mlp_module.hpp"
#include "model_files.hpp"
#include "shardplan/atomic_file.hpp"
#include "shardplan/cost_features.hpp"
#include "shardplan/cost_model_io.hpp"
#include "shardplan/costs/cost_data.hpp"
#include "shardplan/dataset/random.hpp"
#include "shardplan/errors.hpp"
#include "shardplan/progress.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;

const std::vector<int> kShardWidths = {128, 32};
const std::vector<int> kHeadWidths = {64};
const std::vector<int> kCommWidths = {32};
// The compute model's interaction factor stays within [1/e, e] of the summed alone latencies.
// A forward all-to-all measured shorter than its wait (timer granularity) still took some transfer time.
constexpr double kMinTransferMs = 0.01;

// Independent random streams of the seed: data splits, then each model's shuffling.
constexpr uint64_t kComputeSplitStream = 1;
constexpr uint64_t kCommSplitStream = 2;
constexpr uint64_t kComputeShuffleStream = 3;
constexpr uint64_t kCommShuffleStream = 4;
constexpr uint64_t kHoldoutShuffleStream = 5;

struct Split {
  std::vector<std::size_t> train, validation, test;
};

Split split_indices(std::size_t n, const PretrainConfig& config, uint64_t stream) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(derive_seed(config.seed, stream));
  rng.shuffle(order);
  auto n_test = static_cast<std::size_t>(std::round(config.test_fraction * static_cast<double>(n)));
  auto n_val = static_cast<std::size_t>(std::round(config.validation_fraction * static_cast<double>(n)));
  if (n_test + n_val >= n) throw InputError(fmt::format("{} samples are too few to split for training", n));
  Split split;
  split.test.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_test));
  split.validation.assign(order.begin() + static_cast<std::ptrdiff_t>(n_test),
                          order.begin() + static_cast<std::ptrdiff_t>(n_test + n_val));
  split.train.assign(order.begin() + static_cast<std::ptrdiff_t>(n_test + n_val), order.end());
  return split;
}

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

// Adam with early stopping on the validation loss; the best validation weights are restored at the end.
struct TrainOutcome {
  int epochs_run = 0;
  int best_epoch = 0;
  double best_validation_loss = 0.0;
};

template <typename Module, typename LossFn>
TrainOutcome train(Module& module, std::size_t train_size, const LossFn& loss_of_batch,
                   const std::function<double()>& validation_loss, const PretrainConfig& config, const std::string& what,
                   uint64_t shuffle_stream) {
  torch::optim::Adam optimizer(module->parameters(), torch::optim::AdamOptions(config.learning_rate));
  std::vector<std::size_t> order(train_size);
  for (std::size_t i = 0; i < train_size; ++i) order[i] = i;
  Rng rng(derive_seed(config.seed, shuffle_stream));
  TrainOutcome outcome;
  outcome.best_validation_loss = std::numeric_limits<double>::infinity();
  std::vector<torch::Tensor> best;
  Progress progress(what + " epochs", config.epochs, 0, config.quiet);
  for (int epoch = 1; epoch <= config.epochs; ++epoch) {
    rng.shuffle(order);
    module->train();
    double train_loss = 0.0;
    std::size_t batches = 0;
    for (std::size_t start = 0; start < order.size(); start += static_cast<std::size_t>(config.batch_size)) {
      std::size_t end = std::min(order.size(), start + static_cast<std::size_t>(config.batch_size));
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
    progress.update(epoch, fmt::format("train {:.4f} val {:.4f} (best {:.4f} @{})", train_loss / static_cast<double>(batches),
                                       val, outcome.best_validation_loss, outcome.best_epoch));
    if (epoch - outcome.best_epoch >= config.patience) break;
  }
  progress.finish();
  torch::NoGradGuard no_grad;
  auto params = module->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(best[i]);
  spdlog::info("{}: {} epochs, best validation loss {:.5f} at epoch {}", what, outcome.epochs_run,
               outcome.best_validation_loss, outcome.best_epoch);
  return outcome;
}

// ---- compute model ----

struct ComputeSet {
  std::vector<std::vector<ComputeFeatureVector>> shards;  // per sample
  std::vector<double> latency_ms;
};

ComputeSet compute_set(const CostData& data) {
  ComputeSet set;
  for (const auto& sample : data.compute) {
    std::vector<ComputeFeatureVector> features;
    for (const auto& shard : sample.shards) features.push_back(compute_features(shard));
    set.shards.push_back(std::move(features));
    set.latency_ms.push_back(undisturbed_latency_ms(sample));
  }
  return set;
}

struct ComputeBatch {
  torch::Tensor x, device, target;
  int64_t devices;
};

ComputeBatch compute_batch(const ComputeSet& set, const std::vector<std::size_t>& samples, const Normaliser& norm) {
  std::vector<const ComputeFeatureVector*> rows;
  std::vector<int64_t> device;
  std::vector<float> target;
  for (std::size_t b = 0; b < samples.size(); ++b) {
    for (const auto& f : set.shards[samples[b]]) {
      rows.push_back(&f);
      device.push_back(static_cast<int64_t>(b));
    }
    target.push_back(static_cast<float>(std::log(set.latency_ms[samples[b]])));
  }
  return {normalised_tensor(rows, norm), torch::tensor(device, torch::kInt64), torch::tensor(target),
          static_cast<int64_t>(samples.size())};
}

// ---- communication model ----

struct CommRows {
  std::vector<CommFeatureVector> features;  // one row per device of every sample
  std::vector<std::array<float, 2>> targets;  // log ms of the forward transfer (after the wait) and backward
  std::vector<std::size_t> sample_of_row;
};

CommRows comm_rows(const std::vector<CommSample>& samples) {
  CommRows rows;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const CommSample& sample = samples[s];
    auto features = comm_features(sample.dim_sums, sample.delays_ms);
    std::vector<double> waits = comm_waits(sample.delays_ms);
    for (std::size_t r = 0; r < features.size(); ++r) {
      rows.features.push_back(features[r]);
      double fw_transfer = std::max(kMinTransferMs, sample.fw_ms[r] - waits[r]);
      double bw_transfer = std::max(kMinTransferMs, sample.bw_ms[r]);
      rows.targets.push_back({static_cast<float>(std::log(fw_transfer)), static_cast<float>(std::log(bw_transfer))});
      rows.sample_of_row.push_back(s);
    }
  }
  return rows;
}

std::vector<std::size_t> rows_of_samples(const CommRows& rows, const std::vector<std::size_t>& samples) {
  std::set<std::size_t> wanted(samples.begin(), samples.end());
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < rows.sample_of_row.size(); ++r) {
    if (wanted.count(rows.sample_of_row[r])) out.push_back(r);
  }
  return out;
}

struct CommTrained {
  MlpNet net{nullptr};
  CommModelSpec spec;
  TrainOutcome outcome;
};

CommTrained train_comm(const CommRows& rows, const std::vector<std::size_t>& train_rows,
                       const std::vector<std::size_t>& val_rows, const PretrainConfig& config, const std::string& what,
                       uint64_t shuffle_stream) {
  CommTrained t;
  std::vector<CommFeatureVector> train_features;
  std::array<double, 2> sum{}, sq{};
  for (std::size_t r : train_rows) {
    train_features.push_back(rows.features[r]);
    for (int k = 0; k < 2; ++k) {
      sum[k] += rows.targets[r][k];
      sq[k] += static_cast<double>(rows.targets[r][k]) * rows.targets[r][k];
    }
  }
  t.spec.features = fit_normaliser(train_features);
  for (int k = 0; k < 2; ++k) {
    double n = static_cast<double>(train_rows.size());
    double mean = sum[k] / n;
    t.spec.target_mean[k] = static_cast<float>(mean);
    t.spec.target_std[k] = static_cast<float>(std::max(1e-6, std::sqrt(std::max(0.0, sq[k] / n - mean * mean))));
  }
  t.net = MlpNet(kCommFeatures, [] { auto w = kCommWidths; w.push_back(2); return w; }(), false);
  auto batch_of = [&](const std::vector<std::size_t>& row_ids) {
    std::vector<const CommFeatureVector*> feature_rows;
    std::vector<float> target;
    for (std::size_t r : row_ids) {
      feature_rows.push_back(&rows.features[r]);
      for (int k = 0; k < 2; ++k) target.push_back((rows.targets[r][k] - t.spec.target_mean[k]) / t.spec.target_std[k]);
    }
    return std::make_pair(normalised_tensor(feature_rows, t.spec.features),
                          torch::tensor(target).view({static_cast<int64_t>(row_ids.size()), 2}));
  };
  auto validation = batch_of(val_rows);
  PretrainConfig comm_config = config;
  comm_config.batch_size = config.batch_size * 8;  // rows are devices: a sample contributes W of them
  t.outcome = train(
      t.net, train_rows.size(),
      [&](const std::vector<std::size_t>& batch) {
        std::vector<std::size_t> ids;
        for (std::size_t i : batch) ids.push_back(train_rows[i]);
        auto [x, y] = batch_of(ids);
        return torch::l1_loss(t.net->forward(x), y);
      },
      [&] {
        torch::NoGradGuard no_grad;
        return torch::l1_loss(t.net->forward(validation.first), validation.second).template item<double>();
      },
      comm_config, what, shuffle_stream);
  t.spec.net = t.net->to_plain();
  return t;
}

void comm_predictions(const NeuralCostModel& model, const std::vector<CommSample>& samples,
                      std::vector<double>& fw_pred, std::vector<double>& fw_true, std::vector<double>& bw_pred,
                      std::vector<double>& bw_true) {
  for (const auto& sample : samples) {
    std::vector<double> fw, bw;
    model.predict_comm(sample.dim_sums, sample.delays_ms, fw, bw);
    fw_pred.insert(fw_pred.end(), fw.begin(), fw.end());
    bw_pred.insert(bw_pred.end(), bw.begin(), bw.end());
    fw_true.insert(fw_true.end(), sample.fw_ms.begin(), sample.fw_ms.end());
    bw_true.insert(bw_true.end(), sample.bw_ms.begin(), sample.bw_ms.end());
  }
}

nlohmann::json comm_metrics(const NeuralCostModel& model, const std::vector<CommSample>& samples) {
  std::vector<double> fw_pred, fw_true, bw_pred, bw_true;
  comm_predictions(model, samples, fw_pred, fw_true, bw_pred, bw_true);
  return {{"fw", compute_metrics(fw_pred, fw_true).to_json()}, {"bw", compute_metrics(bw_pred, bw_true).to_json()}};
}

template <typename T>
std::vector<T> pick(const std::vector<T>& values, const std::vector<std::size_t>& ids) {
  std::vector<T> out;
  for (std::size_t i : ids) out.push_back(values[i]);
  return out;
}

nlohmann::json provenance(const nlohmann::json& meta) {
  nlohmann::json out;
  for (const char* key : {"device", "device_model", "cpu_model", "threads", "torch_version", "batch_size", "host", "date", "world_size", "backend"}) {
    if (meta.contains(key)) out[key] = meta[key];
  }
  return out;
}

}  // namespace

nlohmann::json pretrain_cost_models(const PretrainConfig& config) {
  if (config.epochs < 1 || config.batch_size < 1 || config.learning_rate <= 0 || config.threads < 1) {
    throw InputError("--epochs, --batch-size, --lr and --threads must be positive");
  }
  if (config.validation_fraction <= 0 || config.test_fraction <= 0 || config.validation_fraction + config.test_fraction >= 0.9) {
    throw InputError(fmt::format("--val-fraction and --test-fraction must be positive and sum below 0.9, got {} and {}",
                                 config.validation_fraction, config.test_fraction));
  }
  auto started = std::chrono::steady_clock::now();
  at::set_num_threads(config.threads);
  torch::manual_seed(config.seed);

  CostData compute_data = load_cost_data(config.data_dir, CostKind::kCompute);
  std::size_t collected = compute_data.compute.size();
  if (config.max_iteration_spread > 0) {
    auto disturbed = [&](const ComputeSample& s) {
      if (s.iterations_ms.size() < 2) return false;
      auto [lo, hi] = std::minmax_element(s.iterations_ms.begin(), s.iterations_ms.end());
      return (*hi - *lo) > config.max_iteration_spread * s.latency_ms;
    };
    auto& samples = compute_data.compute;
    samples.erase(std::remove_if(samples.begin(), samples.end(), disturbed), samples.end());
    spdlog::info("left out {} of {} compute samples whose timed iterations spread over {:.0f}% of their median",
                 collected - samples.size(), collected, 100 * config.max_iteration_spread);
  }
  CostData comm_data = load_cost_data(config.data_dir, CostKind::kComm);
  spdlog::info("training on {} compute samples and {} comm samples from {}", compute_data.compute.size(),
               comm_data.comm.size(), config.data_dir);

  // Compute model.
  ComputeSet set = compute_set(compute_data);
  Split split = split_indices(set.latency_ms.size(), config, kComputeSplitStream);
  std::vector<ComputeFeatureVector> train_rows;
  for (std::size_t i : split.train) train_rows.insert(train_rows.end(), set.shards[i].begin(), set.shards[i].end());
  ComputeModelSpec compute_spec;
  compute_spec.features = fit_normaliser(train_rows);
  compute_spec.interaction_range = static_cast<float>(config.interaction_range);
  ComputeNet compute_net(kComputeFeatures, kShardWidths, kHeadWidths, config.interaction_range);
  ComputeBatch validation = compute_batch(set, split.validation, compute_spec.features);
  TrainOutcome compute_outcome = train(
      compute_net, split.train.size(),
      [&](const std::vector<std::size_t>& batch) {
        ComputeBatch b = compute_batch(set, pick(split.train, batch), compute_spec.features);
        return torch::mse_loss(compute_net->forward(b.x, b.device, b.devices), b.target);
      },
      [&] {
        torch::NoGradGuard no_grad;
        return torch::mse_loss(compute_net->forward(validation.x, validation.device, validation.devices), validation.target)
            .item<double>();
      },
      config, "compute model", kComputeShuffleStream);
  compute_spec.shard_net = compute_net->shard_net->to_plain();
  compute_spec.alone = compute_net->alone->to_plain();
  compute_spec.head = compute_net->head->to_plain();
  compute_spec.step_cost_ms = static_cast<float>(compute_net->step_cost_ms());
  compute_spec.latency_weighted_context = true;

  // Communication model on every collected world size; split by sample so no collective leaks across.
  CommRows rows = comm_rows(comm_data.comm);
  Split comm_split = split_indices(comm_data.comm.size(), config, kCommSplitStream);
  CommTrained comm = train_comm(rows, rows_of_samples(rows, comm_split.train), rows_of_samples(rows, comm_split.validation),
                                config, "comm model", kCommShuffleStream);

  // Generalisation across device counts: retrain without one world size, test on it.
  std::set<int> world_sizes;
  for (const auto& s : comm_data.comm) world_sizes.insert(s.world_size);
  nlohmann::json holdout_metrics = nullptr;
  int holdout = config.holdout_world_size;
  if (holdout == 0 && world_sizes.size() >= 3) holdout = *std::next(world_sizes.begin(), static_cast<std::ptrdiff_t>(world_sizes.size() / 2));
  if (holdout != 0 && world_sizes.count(holdout)) {
    std::vector<std::size_t> seen_train, seen_val;
    std::vector<CommSample> held;
    for (std::size_t s : comm_split.train) if (comm_data.comm[s].world_size != holdout) seen_train.push_back(s);
    for (std::size_t s : comm_split.validation) if (comm_data.comm[s].world_size != holdout) seen_val.push_back(s);
    for (const auto& s : comm_data.comm) if (s.world_size == holdout) held.push_back(s);
    CommTrained without = train_comm(rows, rows_of_samples(rows, seen_train), rows_of_samples(rows, seen_val), config,
                                     fmt::format("comm model without W={}", holdout), kHoldoutShuffleStream);
    NeuralCostModel probe("holdout", compute_spec, without.spec);
    holdout_metrics = comm_metrics(probe, held);
    holdout_metrics["world_size"] = holdout;
  }

  // Write the directory, then evaluate through the same loading and plain-C++ inference the planner uses.
  nlohmann::json meta = {
      {"format", kModelFormat},
      {"name", fs::path(config.out_dir).filename().string()},
      {"feature_schema", kFeatureSchemaVersion},
      {"compute", {{"features", kComputeFeatures}, {"shard_layers", kShardWidths}, {"head_layers", kHeadWidths},
                   {"interaction_range", config.interaction_range},
                   {"step_cost_ms", compute_spec.step_cost_ms},
                   {"context", "latency-weighted mean embedding"},
                   {"feature_mean", compute_spec.features.mean}, {"feature_std", compute_spec.features.std},
                   {"target", "log ms of the fastest timed iteration: log(sum of shards' ms x "
                              "exp(interaction_range x tanh(head)) + step_cost_ms)"},
                   {"weights", kComputeWeightsFile}}},
      {"comm", {{"features", kCommFeatures}, {"layers", kCommWidths}, {"feature_mean", comm.spec.features.mean},
                {"feature_std", comm.spec.features.std},
                {"target", "standardised log ms of the transfers: forward minus the wait, backward"},
                {"target_mean", comm.spec.target_mean}, {"target_std", comm.spec.target_std},
                {"world_sizes", world_sizes}, {"weights", kCommWeightsFile}}},
      {"training", {{"seed", config.seed}, {"threads", config.threads}, {"learning_rate", config.learning_rate},
                    {"batch_size", config.batch_size}, {"max_epochs", config.epochs}, {"patience", config.patience},
                    {"loss", "MSE on log latency (compute); L1 on standardised log transfer time (comm)"},
                    {"compute_epochs", compute_outcome.epochs_run}, {"compute_best_epoch", compute_outcome.best_epoch},
                    {"comm_epochs", comm.outcome.epochs_run}, {"comm_best_epoch", comm.outcome.best_epoch},
                    {"command", config.command_line}}},
      {"data", {{"dir", config.data_dir},
                {"compute", {{"provenance", provenance(compute_data.meta)}, {"collected", collected},
                             {"max_iteration_spread", config.max_iteration_spread}, {"samples", set.latency_ms.size()},
                             {"train", split.train.size()}, {"validation", split.validation.size()}, {"test", split.test.size()}}},
                {"comm", {{"samples", comm_data.comm.size()}, {"train", comm_split.train.size()},
                          {"validation", comm_split.validation.size()}, {"test", comm_split.test.size()}}}}}};
  save_model_directory(config.out_dir, meta, compute_net, comm.net);

  std::unique_ptr<NeuralCostModel> loaded = load_cost_model(config.out_dir);
  std::vector<std::vector<ShardFeatures>> test_sets;
  std::vector<double> test_latency;
  for (std::size_t i : split.test) {
    test_sets.push_back(compute_data.compute[i].shards);
    test_latency.push_back(undisturbed_latency_ms(compute_data.compute[i]));
  }
  meta["metrics"] = {{"compute", compute_metrics(loaded->predict_compute(test_sets), test_latency).to_json()},
                     {"comm", comm_metrics(*loaded, pick(comm_data.comm, comm_split.test))},
                     {"comm_holdout", holdout_metrics}};
  meta["training"]["seconds"] = std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  write_file_atomically((fs::path(config.out_dir) / "meta.json").string(), meta.dump(2) + "\n");
  return meta;
}

nlohmann::json evaluate_cost_model(const std::string& model_dir, const std::string& data_dir) {
  std::unique_ptr<NeuralCostModel> model = load_cost_model(model_dir);
  nlohmann::json out = nlohmann::json::object();
  if (std::optional<CostData> data = find_cost_data(data_dir, CostKind::kCompute)) {
    std::vector<std::vector<ShardFeatures>> sets;
    std::vector<double> measured;
    for (const auto& s : data->compute) {
      sets.push_back(s.shards);
      measured.push_back(undisturbed_latency_ms(s));
    }
    out["compute"] = compute_metrics(model->predict_compute(sets), measured).to_json();
  }
  if (std::optional<CostData> data = find_cost_data(data_dir, CostKind::kComm)) {
    out["comm"] = comm_metrics(*model, data->comm);
  }
  if (out.empty()) throw InputError(fmt::format("{}: holds no compute or comm cost data", data_dir));
  return out;
}

}  // namespace shardplan
