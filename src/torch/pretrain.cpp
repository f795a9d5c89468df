// Pre-training the compute and communication cost models with LibTorch (method.md, "Pre-train").
#include "shardplan/torch/pretrain.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "mlp_module.hpp"
#include "model_files.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/allreduce_fit.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/cost_model/cost_features.hpp"
#include "shardplan/cost_model/fabric_fit.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/cost_model/rowwise_fit.hpp"
#include "shardplan/torch/compute_benchmark.hpp"
#include "training.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;
using namespace training;

const std::vector<int> kShardWidths = {128, 32};
const std::vector<int> kHeadWidths = {64};
const std::vector<int> kCommWidths = {32};
// The hierarchical comm network's hidden units: convex and concave ones of each kind, and context-only ones.
constexpr int kCommBends = 12;
constexpr int kCommFreeUnits = 16;
// The compute model's interaction factor stays within [1/e, e] of the summed alone latencies.
// A forward all-to-all measured shorter than its wait (timer granularity) still took some transfer time.
constexpr double kMinTransferMs = 0.01;

// Independent random streams of the seed: data splits, then each model's shuffling.
constexpr uint64_t kComputeSplitStream = 1;
constexpr uint64_t kCommSplitStream = 2;
constexpr uint64_t kComputeShuffleStream = 3;
constexpr uint64_t kCommShuffleStream = 4;
constexpr uint64_t kHoldoutShuffleStream = 5;

// ---- communication model (hierarchical: CommModelSpec) ----

// A row as the backward's output sees it: the start delays cleared (the backward is timed after a barrier).
HierCommFeatureVector backward_row(HierCommFeatureVector row) {
  clear_start_delays(row);
  return row;
}

struct CommRows {
  std::vector<HierCommFeatureVector> features;  // one row per device of every sample
  std::vector<std::array<float, 2>> targets;    // log ms of the forward transfer (after the wait) and backward
  std::vector<std::size_t> sample_of_row;
};

CommRows comm_rows(const std::vector<CommSample>& samples, const CommFabric& fabric) {
  CommRows rows;
  std::vector<HierCommFeatureVector> features;
  std::vector<double> structure;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const CommSample& sample = samples[s];
    hierarchical_comm_features_into(fabric_for_sample(fabric, sample), model_dim_sums(sample), sample.delays_ms,
                                    features, structure);
    std::vector<double> waits = comm_waits(sample.delays_ms);
    for (std::size_t r = 0; r < features.size(); ++r) {
      rows.features.push_back(features[r]);
      double fw_transfer = std::max(kMinTransferMs, sample.fw_ms[r] - waits[r]);
      double bw_transfer = std::max(kMinTransferMs, sample.bw_ms[r]);
      // The network learns the log of measured over structural time.
      const double log_structure = std::log(structure[r]);
      rows.targets.push_back({static_cast<float>(std::log(fw_transfer) - log_structure),
                              static_cast<float>(std::log(bw_transfer) - log_structure)});
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

TrainSettings train_settings(const PretrainConfig& config) {
  TrainSettings settings;
  settings.epochs = config.epochs;
  settings.patience = config.patience;
  settings.learning_rate = config.learning_rate;
  settings.batch_size = config.batch_size;
  settings.seed = config.seed;
  settings.quiet = config.quiet;
  return settings;
}

struct CommTrained {
  MlpNet net{nullptr};
  CommModelSpec spec;
  TrainOutcome outcome;
};

// The comm network's input normalisation and clamping range (over what either output sees: the rows with
// their delays and without) and its targets' standardisation, from the training rows.
void fit_comm_scaling(CommModelSpec& spec, const CommRows& rows, const std::vector<std::size_t>& train_rows) {
  std::vector<HierCommFeatureVector> train_features;
  std::array<double, 2> sum{}, sq{};
  spec.input_min.assign(kHierCommFeatures, std::numeric_limits<float>::max());
  spec.input_max.assign(kHierCommFeatures, std::numeric_limits<float>::lowest());
  for (std::size_t r : train_rows) {
    for (const HierCommFeatureVector& row : {rows.features[r], backward_row(rows.features[r])}) {
      train_features.push_back(row);
      for (std::size_t k = 0; k < static_cast<std::size_t>(kHierCommFeatures); ++k) {
        spec.input_min[k] = std::min(spec.input_min[k], row[k]);
        spec.input_max[k] = std::max(spec.input_max[k], row[k]);
      }
    }
    for (int k = 0; k < 2; ++k) {
      sum[k] += rows.targets[r][k];
      sq[k] += static_cast<double>(rows.targets[r][k]) * rows.targets[r][k];
    }
  }
  spec.features = fit_normaliser(train_features);
  for (int k = 0; k < 2; ++k) {
    double n = static_cast<double>(train_rows.size());
    double mean = sum[k] / n;
    spec.target_mean[k] = static_cast<float>(mean);
    spec.target_std[k] = static_cast<float>(std::max(1e-6, std::sqrt(std::max(0.0, sq[k] / n - mean * mean))));
  }
}

// The rows of a batch as the network sees them: the forward output's inputs with their delays, the
// backward one's without, and both standardised targets.
struct CommBatch {
  torch::Tensor forward_x, backward_x, target;
};

CommBatch comm_batch(const CommRows& rows, const std::vector<std::size_t>& row_ids, const CommModelSpec& spec) {
  std::vector<const HierCommFeatureVector*> forward_rows, backward_rows;
  std::vector<HierCommFeatureVector> cleared;
  cleared.reserve(row_ids.size());
  std::vector<float> target;
  for (std::size_t r : row_ids) {
    forward_rows.push_back(&rows.features[r]);
    cleared.push_back(backward_row(rows.features[r]));
    backward_rows.push_back(&cleared.back());
    for (int k = 0; k < 2; ++k) target.push_back((rows.targets[r][k] - spec.target_mean[k]) / spec.target_std[k]);
  }
  return CommBatch{normalised_tensor(forward_rows, spec.features), normalised_tensor(backward_rows, spec.features),
                   torch::tensor(target).view({static_cast<int64_t>(row_ids.size()), 2})};
}

CommTrained train_comm(const CommRows& rows, const std::vector<std::size_t>& train_rows,
                       const std::vector<std::size_t>& val_rows, const CommFabric& fabric, const PretrainConfig& config,
                       const std::string& what, uint64_t shuffle_stream) {
  CommTrained t;
  t.spec.form = CommForm::kHierarchical;
  t.spec.fabric = fabric;
  t.spec.backward_without_delays = true;
  fit_comm_scaling(t.spec, rows, train_rows);
  MonotoneNet net(kHierCommFeatures, kHierCommMonotoneInputs, kCommBends, kCommFreeUnits, 2);
  // The forward output from the rows with their delays, the backward one from the rows without.
  auto loss_of = [&](const CommBatch& b) {
    return 0.5 * (torch::l1_loss(net->forward(b.forward_x).select(1, 0), b.target.select(1, 0)) +
                  torch::l1_loss(net->forward(b.backward_x).select(1, 1), b.target.select(1, 1)));
  };
  const CommBatch validation = comm_batch(rows, val_rows, t.spec);
  TrainSettings comm_settings = train_settings(config);
  comm_settings.batch_size = config.batch_size * 8;  // rows are devices: a sample contributes W of them
  t.outcome = train(
      net, train_rows.size(),
      [&](const std::vector<std::size_t>& batch) {
        std::vector<std::size_t> ids;
        for (std::size_t i : batch) ids.push_back(train_rows[i]);
        return loss_of(comm_batch(rows, ids, t.spec));
      },
      [&] {
        torch::NoGradGuard no_grad;
        return loss_of(validation).template item<double>();
      },
      comm_settings, what, shuffle_stream);
  t.net = net->exported();
  t.spec.net = t.net->to_plain();
  t.spec.net.layers.front().concave_begin = net->concave_begin();
  t.spec.net.layers.front().concave_end = net->concave_end();
  return t;
}

// Samples that time the all-to-all alone (not a data-parallel all-reduce nor row-wise collectives).
bool times_alltoall_alone(const CommSample& sample) { return sample.allreduce_floats <= 0 && sample.rw_dim <= 0; }

// Each sample's slowest device, predicted against measured (not necessarily the same rank): the all-to-all
// a step waits for. Per-device errors weigh every rank alike, and a rank that finishes early costs the
// step nothing. The samples' widths are kept for how the slowest backward answers imbalance.
struct SlowestDevices {
  std::vector<std::vector<int64_t>> dim_sums;
  std::vector<double> fw_pred, fw_true, bw_pred, bw_true;

  void add(const CommSample& sample, const std::vector<double>& fw, const std::vector<double>& bw) {
    if (fw.empty() || sample.fw_ms.empty()) return;
    dim_sums.push_back(model_dim_sums(sample));
    fw_pred.push_back(*std::max_element(fw.begin(), fw.end()));
    fw_true.push_back(*std::max_element(sample.fw_ms.begin(), sample.fw_ms.end()));
    bw_pred.push_back(*std::max_element(bw.begin(), bw.end()));
    bw_true.push_back(*std::max_element(sample.bw_ms.begin(), sample.bw_ms.end()));
  }
  void append(const SlowestDevices& other) {
    dim_sums.insert(dim_sums.end(), other.dim_sums.begin(), other.dim_sums.end());
    fw_pred.insert(fw_pred.end(), other.fw_pred.begin(), other.fw_pred.end());
    fw_true.insert(fw_true.end(), other.fw_true.begin(), other.fw_true.end());
    bw_pred.insert(bw_pred.end(), other.bw_pred.begin(), other.bw_pred.end());
    bw_true.insert(bw_true.end(), other.bw_true.begin(), other.bw_true.end());
  }
  void into(nlohmann::json& metrics) const {
    if (fw_true.empty()) return;
    metrics["fw_slowest"] = compute_metrics(fw_pred, fw_true).to_json();
    metrics["bw_slowest"] = compute_metrics(bw_pred, bw_true).to_json();
  }
};

// Predicted against measured, per device, in both directions.
struct DirectionScores {
  std::vector<double> fw_pred, fw_true, bw_pred, bw_true;

  void add(const CommSample& sample, const std::vector<double>& fw, const std::vector<double>& bw) {
    fw_pred.insert(fw_pred.end(), fw.begin(), fw.end());
    bw_pred.insert(bw_pred.end(), bw.begin(), bw.end());
    fw_true.insert(fw_true.end(), sample.fw_ms.begin(), sample.fw_ms.end());
    bw_true.insert(bw_true.end(), sample.bw_ms.begin(), sample.bw_ms.end());
  }
  nlohmann::json to_json() const {
    return {{"fw", compute_metrics(fw_pred, fw_true).to_json()}, {"bw", compute_metrics(bw_pred, bw_true).to_json()}};
  }
};

// A comm model's predictions against the measurements, by what each sample times.
struct CommScores {
  DirectionScores all;                     // every device of every sample
  std::map<int, DirectionScores> by_size;  // the all-to-all alone, per world size: one size's bias hides in all
  std::map<int, SlowestDevices> slowest_by_size;
  std::vector<double> ar_pred, ar_true;  // data-parallel all-reduces (given workloads), every rank
  std::vector<double> rw_pred, rw_true;  // plans with row-wise tables: their step, mean over ranks

  // Each sample is predicted with its own layout of ranks on hosts (CommSample::devices_per_host), once.
  void add(NeuralCostModel& model, const CommSample& sample) {
    std::vector<double> fw, bw;
    model.set_devices_per_host(sample.devices_per_host > 0 ? sample.devices_per_host : sample.world_size);
    model.predict_comm(model_dim_sums(sample), sample.delays_ms, fw, bw);
    all.add(sample, fw, bw);
    if (times_alltoall_alone(sample)) {
      by_size[sample.world_size].add(sample, fw, bw);
      slowest_by_size[sample.world_size].add(sample, fw, bw);
    } else if (sample.allreduce_floats > 0) {
      // A data-parallel all-reduce timed too (given workloads): every rank against the model's.
      const double predicted =
          model.allreduce_ms(4.0 * static_cast<double>(sample.allreduce_floats), sample.world_size);
      for (double ms : sample.allreduce_ms) {
        ar_pred.push_back(predicted);
        ar_true.push_back(ms);
      }
    } else if (sample.rw_dim > 0 && !fw.empty()) {
      add_rowwise_step(model, sample, fw, bw);
    }
  }

  // A plan with row-wise tables: its step (forward plus backward, mean over ranks) as the model scores it,
  // its width in the all-to-all plus the row-wise collectives' charge.
  void add_rowwise_step(NeuralCostModel& model, const CommSample& sample, const std::vector<double>& fw,
                        const std::vector<double>& bw) {
    double predicted = 0.0;
    double measured = 0.0;
    for (std::size_t r = 0; r < fw.size(); ++r) {
      predicted += fw[r] + bw[r];
      measured += sample.fw_ms[r] + sample.bw_ms[r];
    }
    const double ranks = static_cast<double>(fw.size());
    rw_pred.push_back(predicted / ranks + model.rowwise_collectives_ms(sample.rw_dim, sample.world_size));
    rw_true.push_back(measured / ranks);
  }

  nlohmann::json to_json() const {
    nlohmann::json metrics = all.to_json();
    SlowestDevices slowest;
    for (const auto& [world_size, own] : slowest_by_size) slowest.append(own);
    slowest.into(metrics);
    if (by_size.size() > 1) {
      for (const auto& [world_size, own] : by_size)
        metrics["by_world_size"][std::to_string(world_size)] = own.to_json();
    }
    add_imbalance_response(metrics);
    if (!ar_true.empty()) metrics["allreduce"] = compute_metrics(ar_pred, ar_true).to_json();
    if (!rw_true.empty()) metrics["rowwise"] = compute_metrics(rw_pred, rw_true).to_json();
    return metrics;
  }

  // How the slowest backward answers imbalance, measured and predicted, within one world size only: sizes
  // differ in how widths reach the links.
  void add_imbalance_response(nlohmann::json& metrics) const {
    for (const auto& [world_size, own] : slowest_by_size) {
      const auto measured = imbalance_response(own.dim_sums, own.bw_true);
      const auto predicted = imbalance_response(own.dim_sums, own.bw_pred);
      if (!measured || !predicted) continue;
      auto round = [](double v) { return std::round(v * 1e4) / 1e4; };
      metrics["bw_slowest_imbalance"][std::to_string(world_size)] = {
          {"measured_exponent", round(measured->imbalance_exponent)},
          {"predicted_exponent", round(predicted->imbalance_exponent)},
          {"measured_total_width_exponent", round(measured->total_width_exponent)},
          {"predicted_total_width_exponent", round(predicted->total_width_exponent)},
          {"count", measured->count}};
    }
  }
};

nlohmann::json comm_metrics(NeuralCostModel& model, const std::vector<CommSample>& samples) {
  CommScores scores;
  for (const auto& sample : samples) scores.add(model, sample);
  return scores.to_json();
}

// The structure alone on the same samples (forward: the wait plus the structural time): what the learned
// part adds is the difference.
nlohmann::json structure_metrics(const CommFabric& fabric, const std::vector<CommSample>& samples) {
  DirectionScores all;
  SlowestDevices slowest;
  std::vector<double> structure;
  for (const auto& sample : samples) {
    hierarchical_alltoall_ms(fabric_for_sample(fabric, sample), model_dim_sums(sample), structure);
    std::vector<double> waits = comm_waits(sample.delays_ms);
    std::vector<double> fw(structure.size());
    for (std::size_t r = 0; r < structure.size(); ++r) fw[r] = waits[r] + structure[r];
    all.add(sample, fw, structure);
    if (times_alltoall_alone(sample)) slowest.add(sample, fw, structure);
  }
  nlohmann::json metrics = all.to_json();
  slowest.into(metrics);
  return metrics;
}

// The first source's meta when a data root held several directories of one kind.
const nlohmann::json& first_source(const nlohmann::json& meta) {
  if (meta.contains("sources") && meta["sources"].is_array() && !meta["sources"].empty()) return meta["sources"][0];
  return meta;
}

// Where the compute part was measured, from the compute data's provenance.
nlohmann::json compute_hardware(const nlohmann::json& compute_meta) {
  const nlohmann::json& meta = first_source(compute_meta);
  // Data collected before "kernel" named the kernel's id carried a description of embedding_bag there.
  const std::string kernel = meta.value("kernel", "") == ComputeBenchConfig::kFbgemmTbeKernel
                                 ? ComputeBenchConfig::kFbgemmTbeKernel
                                 : ComputeBenchConfig::kEmbeddingBagKernel;
  return {{"device", meta.value("device", "")},
          {"device_model", meta.value("device_model", "")},
          {"kernel", kernel},
          {"host", meta.value("host", "")},
          {"date", meta.value("date", "")}};
}

// Where the all-to-alls were timed, from the comm data's provenance.
nlohmann::json comm_hardware(const nlohmann::json& comm_meta, const std::set<int>& world_sizes) {
  const nlohmann::json& meta = first_source(comm_meta);
  return {{"device_model", meta.value("device_model", "")},
          {"backend", meta.value("backend", "")},
          {"world_sizes", world_sizes},
          {"host", meta.value("host", "")},
          {"date", meta.value("date", "")}};
}

// The communication part of a model: trained on comm data, or carried over from another model.
struct CommPart {
  MlpNet net{nullptr};
  nlohmann::json meta_section;  // meta.json's "comm"
  nlohmann::json hardware;      // meta.json's "hardware.comm"
  nlohmann::json data;          // meta.json's "data.comm"
  nlohmann::json test_metrics = nullptr;
  nlohmann::json holdout_metrics = nullptr;
  nlohmann::json structure_metrics = nullptr;
  TrainOutcome outcome;
};

CommPart comm_from_model(const std::string& dir) {
  ModelFiles base = load_model_files(dir);
  CommPart part;
  part.net = base.comm;
  part.meta_section = base.meta["comm"];
  ModelHardware hardware = hardware_from_model_meta(base.meta);
  part.hardware = hardware_to_json(hardware).value("comm", nlohmann::ordered_json::object());
  part.hardware["from_model"] = dir;
  part.data = {{"from_model", dir},
               {"samples", base.meta.value("/data/comm/samples"_json_pointer, nlohmann::json(nullptr))}};
  if (base.meta.contains("metrics")) {
    part.test_metrics = base.meta["metrics"].value("comm", nlohmann::json(nullptr));
    part.holdout_metrics = base.meta["metrics"].value("comm_holdout", nlohmann::json(nullptr));
  }
  spdlog::info("communication model: carried over from {} (trained on {})", dir, describe_hardware(hardware));
  return part;
}

// The profile a structure-only comm section plans on (plan_comm_on_profile wrote its fabric).
std::string profile_name(const nlohmann::json& comm_section) {
  return comm_section["fabric"].value("name", std::string("unnamed"));
}

// The global batch cost data was collected with (every source must agree: the structure's bytes depend on
// it, and a compute sample's time is for that batch).
int64_t collection_batch_size(const nlohmann::json& data_meta) {
  std::set<int64_t> batches;
  auto add = [&](const nlohmann::json& meta) {
    if (meta.contains("batch_size") && meta["batch_size"].is_number_integer())
      batches.insert(meta["batch_size"].get<int64_t>());
  };
  if (data_meta.contains("sources") && data_meta["sources"].is_array()) {
    for (const auto& m : data_meta["sources"]) add(m);
  } else {
    add(data_meta);
  }
  if (batches.size() > 1) {
    throw InputError(
        fmt::format("comm data: sources were collected at different global batches ({}); train on one batch size",
                    fmt::join(batches, ", ")));
  }
  return batches.empty() ? kScaleFreeCommBatch : *batches.begin();
}

// The structure's figures: the hardware profile's, or fitted to the data's samples (all but
// `left_out_world_size`, when the fit is for the held-out test).
CommFabric comm_fabric(const CostData& comm_data, const PretrainConfig& config, int left_out_world_size = 0) {
  const int64_t batch = collection_batch_size(comm_data.meta);
  // Training places each sample by its own layout (fabric_for_sample); the model's GPUs per host is only
  // the default a plan's cluster overrides: the profile's, else the largest multi-host layout measured,
  // else every rank of the largest one-host sample.
  int per_host = 0;
  int single_host_max = 0;
  for (const auto& s : comm_data.comm) {
    if (s.devices_per_host > 0) {
      per_host = std::max(per_host, s.devices_per_host);
    } else {
      single_host_max = std::max(single_host_max, s.world_size);
    }
  }
  if (!config.hardware.empty()) {
    HardwareProfile profile = load_hardware_profile(config.hardware);
    CommFabric fabric = fabric_of(profile, batch);
    spdlog::info("comm structure: profile {} ({})", profile.name, profile.source_path);
    return fabric;
  }
  CommFabric start;
  start.name = "fitted";
  start.batch_size = batch;
  start.devices_per_host = per_host != 0 ? per_host : single_host_max;
  std::vector<CommSample> fitted_on;
  for (const auto& s : comm_data.comm)
    if (s.world_size != left_out_world_size) fitted_on.push_back(s);
  FabricFit fit = fit_fabric(fitted_on, start);
  const CommFabric& f = fit.fabric;
  spdlog::info(
      "comm structure fitted to the data: intra-host {:.4g} GB/s and {:.4g} us per peer, host fabric {}, "
      "inter-host {} (mean |log error| {:.3f}); a hardware profile with these figures plans on the same structure",
      f.intra_bytes_per_ms / 1e6, f.intra_peer_latency_ms * 1e3,
      f.host_bytes_per_ms > 0
          ? fmt::format("{:.4g} GB/s ({}; the other form's error {:.3f})", f.host_bytes_per_ms / 1e6,
                        f.host_adds ? "adding to each GPU's links" : "bounding them", fit.other_form_error)
          : std::string("not shared"),
      fit.inter_measured
          ? fmt::format("{:.4g} GB/s and {:.4g} us per peer", f.inter_bytes_per_ms / 1e6, f.inter_peer_latency_ms * 1e3)
          : std::string("not measured (taken as intra-host)"),
      fit.mean_abs_log_error);
  return fit.fabric;
}

// Comm samples by what they fit. Samples that timed an all-reduce (given workloads) fit the all-reduce only.
// Samples of plans with row-wise tables, and the samples paired with them (tools/rowwise-workloads), fit the
// row-wise collectives only (extra_collectives_ms charges them apart); those of plans with table-row-wise
// tables fit nothing. The all-to-all part learns from the plain ones, so adding any of these leaves it as
// it was.
struct CommSamplesByUse {
  CostData all_to_all;  // the plain samples, with the data's meta
  std::vector<CommSample> allreduce;
  std::vector<RowwisePair> rowwise;
};

CommSamplesByUse comm_samples_by_use(const CostData& all_comm) {
  CommSamplesByUse by_use;
  by_use.all_to_all.meta = all_comm.meta;
  std::vector<char> is_reference;
  by_use.rowwise = rowwise_pairs(all_comm.comm, &is_reference);
  std::size_t row_wise_samples = 0;
  for (std::size_t i = 0; i < all_comm.comm.size(); ++i) {
    const CommSample& s = all_comm.comm[i];
    if (s.allreduce_floats > 0) {
      by_use.allreduce.push_back(s);
    } else if (s.rw_dim > 0 || !s.host_rw_dims.empty() || is_reference[i]) {
      ++row_wise_samples;
    } else {
      by_use.all_to_all.comm.push_back(s);
    }
  }
  if (row_wise_samples > 0) {
    spdlog::info(
        "comm data: {} samples of plans with row-wise or table-row-wise tables and their pairs are left "
        "out of the all-to-all's training ({} row-wise pairs fit the row-wise collectives)",
        row_wise_samples, by_use.rowwise.size());
  }
  if (by_use.all_to_all.comm.empty())
    throw InputError("the comm cost data holds only all-reduce samples: no all-to-all to learn");
  return by_use;
}

// Generalisation across device counts: the net trained again without one world size (the configured one,
// else the middle of three or more), and its metrics on that size's samples. Null when none is held out.
nlohmann::json unseen_world_size_metrics(const CostData& comm_data, const Split& comm_split,
                                         const std::set<int>& world_sizes, const PretrainConfig& config,
                                         const ComputeModelSpec& compute_spec) {
  int holdout = config.holdout_world_size;
  if (holdout == 0 && world_sizes.size() >= 3)
    holdout = *std::next(world_sizes.begin(), static_cast<std::ptrdiff_t>(world_sizes.size() / 2));
  if (holdout == 0 || !world_sizes.count(holdout)) return nullptr;
  std::vector<std::size_t> seen_train, seen_val;
  std::vector<CommSample> held;
  for (std::size_t s : comm_split.train)
    if (comm_data.comm[s].world_size != holdout) seen_train.push_back(s);
  for (std::size_t s : comm_split.validation)
    if (comm_data.comm[s].world_size != holdout) seen_val.push_back(s);
  for (const auto& s : comm_data.comm)
    if (s.world_size == holdout) held.push_back(s);
  // The structure is fitted again without the held-out size too, so nothing of it leaks into the test.
  const CommFabric fabric_without = comm_fabric(comm_data, config, holdout);
  CommRows rows_without = comm_rows(comm_data.comm, fabric_without);
  CommTrained without =
      train_comm(rows_without, rows_of_samples(rows_without, seen_train), rows_of_samples(rows_without, seen_val),
                 fabric_without, config, fmt::format("comm model without W={}", holdout), kHoldoutShuffleStream);
  NeuralCostModel probe("holdout", compute_spec, without.spec);
  nlohmann::json metrics = comm_metrics(probe, held);
  metrics["world_size"] = holdout;
  metrics["structure_alone"] = structure_metrics(fabric_without, held);
  return metrics;
}

// meta.json's "comm" for a trained hierarchical net.
nlohmann::json trained_comm_section(const CommTrained& comm, const CommFabric& fabric,
                                    const std::set<int>& world_sizes) {
  const DenseLayer& hidden = comm.spec.net.layers.front();
  return {{"form", kHierarchicalCommForm},
          {"features", kHierCommFeatures},
          {"layers", {hidden.outputs}},
          {"monotone_inputs", kHierCommMonotoneInputs},
          {"concave_units", {hidden.concave_begin, hidden.concave_end}},
          {"fabric", fabric_to_json(fabric)},
          {"feature_mean", comm.spec.features.mean},
          {"feature_std", comm.spec.features.std},
          {"input_min", comm.spec.input_min},
          {"input_max", comm.spec.input_max},
          {"target",
           "standardised log of measured over structural transfer time (forward minus the "
           "wait, backward); the network is non-decreasing in the structural inputs and sees "
           "them clamped to [input_min, input_max]"},
          {"target_mean", comm.spec.target_mean},
          {"target_std", comm.spec.target_std},
          {"backward_context", kBackwardWithoutDelays},
          {"world_sizes", world_sizes},
          {"weights", kCommWeightsFile}};
}

// The all-reduce fitted to the samples that timed one (none: an empty fit), recorded in `section` with its
// error against the ring structure alone.
AllreduceFit fit_allreduce_into(nlohmann::json& section, const std::vector<CommSample>& samples,
                                const CommFabric& fabric) {
  const AllreduceFit allreduce = fit_allreduce(samples);  // empty without such samples
  if (samples.empty()) return allreduce;
  std::vector<double> structure, fitted, measured;
  for (const auto& s : samples) {
    CommFabric own = fabric;
    own.devices_per_host = s.devices_per_host > 0 ? s.devices_per_host : s.world_size;
    const double bytes = 4.0 * static_cast<double>(s.allreduce_floats);
    structure.push_back(ring_allreduce_ms(own, bytes, s.world_size));
    fitted.push_back(fitted_allreduce_ms(allreduce, own, bytes, s.world_size));
    measured.push_back(measured_allreduce_ms(s));
  }
  section["allreduce"] = allreduce_fit_to_json(allreduce);
  section["allreduce"]["metrics"] = {{"structure_alone", compute_metrics(structure, measured).to_json()},
                                     {"fitted", compute_metrics(fitted, measured).to_json()}};
  spdlog::info("all-reduce fitted to {} samples: MAPE {:.1f}% (the ring structure alone: {:.1f}%)", samples.size(),
               compute_metrics(fitted, measured).mape, compute_metrics(structure, measured).mape);
  return allreduce;
}

// The row-wise collectives fitted to the row-wise pairs, recorded in `section` against the latency-only
// charge they replace (the fitted all-reduce of 4 bytes), on the same pairs.
void fit_rowwise_into(nlohmann::json& section, const std::vector<RowwisePair>& rowwise, const CommFabric& fabric,
                      const AllreduceFit& allreduce) {
  if (rowwise.empty()) return;
  const RowwiseFit fit = fit_rowwise(rowwise);
  section["rowwise"] = rowwise_fit_to_json(fit);
  double fitted_error = 0.0;
  double latency_error = 0.0;
  for (const auto& p : rowwise) {
    CommFabric own = fabric;
    own.devices_per_host = p.world_size;
    fitted_error += std::abs(fitted_rowwise_ms(fit, p.rw_dim, p.world_size) - p.extra_ms);
    latency_error +=
        std::abs(fitted_allreduce_ms(allreduce, own, CostModel::kLatencyProbeBytes, p.world_size) - p.extra_ms);
  }
  const double n = static_cast<double>(rowwise.size());
  section["rowwise"]["metrics"] = {{"pairs", rowwise.size()},
                                   {"mean_abs_error_ms", fitted_error / n},
                                   {"latency_only_mean_abs_error_ms", latency_error / n}};
  spdlog::info("row-wise collectives fitted to {} pairs: mean |error| {:.2f} ms (latency alone: {:.2f} ms)",
               rowwise.size(), fitted_error / n, latency_error / n);
}

CommPart train_comm_part(const CostData& all_comm, const PretrainConfig& config, const ComputeModelSpec& compute_spec) {
  const CommSamplesByUse by_use = comm_samples_by_use(all_comm);
  const CostData& comm_data = by_use.all_to_all;
  const CommFabric fabric = comm_fabric(comm_data, config);
  CommRows rows = comm_rows(comm_data.comm, fabric);
  Split comm_split = split_indices(comm_data.comm.size(), config.validation_fraction, config.test_fraction, config.seed,
                                   kCommSplitStream);
  CommTrained comm =
      train_comm(rows, rows_of_samples(rows, comm_split.train), rows_of_samples(rows, comm_split.validation), fabric,
                 config, "comm model", kCommShuffleStream);
  std::set<int> world_sizes;
  for (const auto& s : comm_data.comm) world_sizes.insert(s.world_size);

  CommPart part;
  part.holdout_metrics = unseen_world_size_metrics(comm_data, comm_split, world_sizes, config, compute_spec);
  NeuralCostModel trained("trained", compute_spec, comm.spec);
  part.test_metrics = comm_metrics(trained, pick(comm_data.comm, comm_split.test));
  part.structure_metrics = structure_metrics(fabric, pick(comm_data.comm, comm_split.test));
  part.net = comm.net;
  part.outcome = comm.outcome;
  part.meta_section = trained_comm_section(comm, fabric, world_sizes);
  const AllreduceFit allreduce = fit_allreduce_into(part.meta_section, by_use.allreduce, fabric);
  fit_rowwise_into(part.meta_section, by_use.rowwise, fabric, allreduce);
  part.hardware = comm_hardware(comm_data.meta, world_sizes);
  part.data = {{"samples", comm_data.comm.size()},
               {"train", comm_split.train.size()},
               {"validation", comm_split.validation.size()},
               {"test", comm_split.test.size()}};
  if (!by_use.allreduce.empty()) part.data["allreduce_samples"] = by_use.allreduce.size();
  return part;
}

void check_pretrain_config(const PretrainConfig& config) {
  if (config.epochs < 1)
    throw SettingError("training epochs", fmt::format("must be at least 1, got {}", config.epochs));
  if (config.batch_size < 1) {
    throw SettingError("training batch", fmt::format("must be at least 1, got {}", config.batch_size));
  }
  if (!(config.learning_rate > 0)) {
    throw SettingError("learning rate", fmt::format("must be positive, got {}", config.learning_rate));
  }
  if (config.threads < 1) {
    throw SettingError("training threads", fmt::format("must be at least 1, got {}", config.threads));
  }
  if (!(config.validation_fraction > 0)) {
    throw SettingError("validation fraction", fmt::format("must be positive, got {}", config.validation_fraction));
  }
  if (!(config.test_fraction > 0)) {
    throw SettingError("test fraction", fmt::format("must be positive, got {}", config.test_fraction));
  }
  if (config.validation_fraction + config.test_fraction >= 0.9) {
    throw SettingError("test fraction", fmt::format("must sum below 0.9 with the validation fraction {}, got {}",
                                                    config.validation_fraction, config.test_fraction));
  }
  if (!(config.interaction_range >= 0.0 && config.interaction_range <= 3.0)) {
    throw SettingError("interaction range", fmt::format("must be in [0, 3], got {}", config.interaction_range));
  }
}

// The compute samples, less those whose timed iterations spread too far (disturbed measurements).
struct ComputeData {
  CostData data;
  std::size_t collected = 0;  // before the disturbed ones were left out
};

ComputeData load_compute_data(const PretrainConfig& config) {
  ComputeData compute{load_cost_data(config.data_dir, CostKind::kCompute), 0};
  compute.collected = compute.data.compute.size();
  std::size_t dropped = drop_disturbed(compute.data.compute, config.max_iteration_spread);
  if (config.max_iteration_spread > 0) {
    spdlog::info("left out {} of {} compute samples whose timed iterations spread over {:.0f}% of their median",
                 dropped, compute.collected, 100 * config.max_iteration_spread);
  }
  return compute;
}

// The comm samples to train on; none when the comm part comes from another model. Compute-only data (one
// GPU cannot time all-to-alls) must name that model.
std::optional<CostData> load_comm_data(const PretrainConfig& config) {
  if (!config.comm_from.empty()) return std::nullopt;
  std::optional<CostData> comm_data = find_cost_data(config.data_dir, CostKind::kComm);
  if (!comm_data) {
    throw SettingError(
        "comm model source",
        fmt::format("needed: {} holds no comm cost data to train the communication model on; to train on compute "
                    "data alone, name a model directory (e.g. models/cpu-2core) whose communication part to keep",
                    config.data_dir));
  }
  return comm_data;
}

struct ComputePart {
  ComputeSet set;
  Split split;
  ComputeModelSpec spec;
  ComputeNet net{nullptr};
  TrainOutcome outcome;
};

ComputePart train_compute_part(const CostData& compute_data, const PretrainConfig& config) {
  ComputePart part;
  part.set = compute_set(compute_data.compute);
  part.split = split_indices(part.set.latency_ms.size(), config.validation_fraction, config.test_fraction, config.seed,
                             kComputeSplitStream);
  const ComputeSet& set = part.set;
  const Split& split = part.split;
  std::vector<ComputeFeatureVector> train_rows;
  for (std::size_t i : split.train) train_rows.insert(train_rows.end(), set.shards[i].begin(), set.shards[i].end());
  ComputeModelSpec& spec = part.spec;
  spec.features = fit_normaliser(train_rows);
  spec.interaction_range = static_cast<float>(config.interaction_range);
  ComputeNet compute_net(kComputeFeatures, kShardWidths, kHeadWidths, config.interaction_range);
  ComputeBatch validation = compute_batch(set, split.validation, spec.features);
  part.outcome = train(
      compute_net, split.train.size(),
      [&](const std::vector<std::size_t>& batch) {
        ComputeBatch b = compute_batch(set, pick(split.train, batch), spec.features);
        return torch::mse_loss(compute_net->forward(b.x, b.device, b.devices), b.target);
      },
      [&] {
        torch::NoGradGuard no_grad;
        return torch::mse_loss(compute_net->forward(validation.x, validation.device, validation.devices),
                               validation.target)
            .item<double>();
      },
      train_settings(config), "compute model", kComputeShuffleStream);
  spec.shard_net = compute_net->shard_net->to_plain();
  spec.alone = compute_net->alone->to_plain();
  spec.head = compute_net->head->to_plain();
  spec.step_cost_ms = static_cast<float>(compute_net->step_cost_ms());
  spec.latency_weighted_context = true;
  part.net = compute_net;
  return part;
}

// The communication part: trained on every collected world size (split by sample so no collective leaks
// across), or carried over from config.comm_from, on a profile's links or at the compute data's batch.
CommPart comm_part(const std::optional<CostData>& comm_data, const CostData& compute_data, const PretrainConfig& config,
                   const ComputeModelSpec& compute_spec) {
  if (comm_data) return train_comm_part(*comm_data, config, compute_spec);
  CommPart comm = comm_from_model(config.comm_from);
  if (!config.hardware.empty()) {
    plan_comm_on_profile(comm.meta_section, comm.hardware, load_hardware_profile(config.hardware),
                         collection_batch_size(compute_data.meta), config.comm_from);
    comm.data = {
        {"from_model", config.comm_from}, {"samples", 0}, {"structure", "profile " + profile_name(comm.meta_section)}};
    comm.test_metrics = nullptr;  // the net's metrics describe hardware the model no longer predicts for
    comm.holdout_metrics = nullptr;
  } else {
    match_comm_batch(comm.meta_section, collection_batch_size(compute_data.meta), config.comm_from);
  }
  return comm;
}

nlohmann::json compute_section(const PretrainConfig& config, const ComputeModelSpec& spec) {
  return {{"features", kComputeFeatures},
          {"shard_layers", kShardWidths},
          {"head_layers", kHeadWidths},
          {"interaction_range", config.interaction_range},
          {"step_cost_ms", spec.step_cost_ms},
          {"context", "latency-weighted mean embedding"},
          {"feature_mean", spec.features.mean},
          {"feature_std", spec.features.std},
          {"target",
           "log ms of the fastest timed iteration: log(sum of shards' ms x "
           "exp(interaction_range x tanh(head)) + step_cost_ms)"},
          {"weights", kComputeWeightsFile}};
}

nlohmann::json training_section(const PretrainConfig& config, const ComputePart& compute, const CommPart& comm,
                                bool comm_trained) {
  nlohmann::json training = {{"seed", config.seed},
                             {"threads", config.threads},
                             {"learning_rate", config.learning_rate},
                             {"batch_size", config.batch_size},
                             {"max_epochs", config.epochs},
                             {"patience", config.patience},
                             {"loss", "MSE on log latency (compute); L1 on standardised log transfer time (comm)"},
                             {"compute_epochs", compute.outcome.epochs_run},
                             {"compute_best_epoch", compute.outcome.best_epoch},
                             {"command", config.command_line}};
  if (comm_trained) {
    training["comm_epochs"] = comm.outcome.epochs_run;
    training["comm_best_epoch"] = comm.outcome.best_epoch;
  } else {
    training["comm_from"] = config.comm_from;
  }
  return training;
}

// meta.json before the test metrics.
nlohmann::json model_meta(const PretrainConfig& config, const ComputeData& compute_data, const ComputePart& compute,
                          const CommPart& comm, bool comm_trained) {
  return {{"format", kModelFormat},
          {"name", fs::path(config.out_dir).filename().string()},
          {"feature_schema", kFeatureSchemaVersion},
          {"hardware", {{"compute", compute_hardware(compute_data.data.meta)}, {"comm", comm.hardware}}},
          {"compute", compute_section(config, compute.spec)},
          {"comm", comm.meta_section},
          {"training", training_section(config, compute, comm, comm_trained)},
          {"data",
           {{"dir", config.data_dir},
            {"compute",
             {{"provenance", data_provenance(first_source(compute_data.data.meta))},
              {"collected", compute_data.collected},
              {"max_iteration_spread", config.max_iteration_spread},
              {"samples", compute.set.latency_ms.size()},
              {"train", compute.split.train.size()},
              {"validation", compute.split.validation.size()},
              {"test", compute.split.test.size()}}},
            {"comm", comm.data}}}};
}

// The test metrics, through the same loading and plain-C++ inference the planner uses.
nlohmann::json test_metrics(const PretrainConfig& config, const CostData& compute_data, const Split& split,
                            const CommPart& comm, bool comm_trained) {
  std::unique_ptr<NeuralCostModel> loaded = load_cost_model(config.out_dir);
  std::vector<std::vector<ShardFeatures>> test_sets;
  std::vector<double> test_latency;
  for (std::size_t i : split.test) {
    test_sets.push_back(compute_data.compute[i].shards);
    test_latency.push_back(undisturbed_latency_ms(compute_data.compute[i]));
  }
  nlohmann::json metrics = {{"compute", compute_metrics(loaded->predict_compute(test_sets), test_latency).to_json()},
                            {"comm", comm.test_metrics},
                            {"comm_holdout", comm.holdout_metrics},
                            {"comm_structure_alone", comm.structure_metrics}};
  if (!comm_trained) {
    metrics["comm_source"] =
        comm.meta_section.value("structure_only", false)
            ? fmt::format("no model: the hierarchical estimate on profile {}'s links, not measured",
                          profile_name(comm.meta_section))
            : fmt::format("{} (its own test metrics)", config.comm_from);
  }
  return metrics;
}

}  // namespace

nlohmann::json pretrain_cost_models(const PretrainConfig& config) {
  check_pretrain_config(config);
  auto started = std::chrono::steady_clock::now();
  at::set_num_threads(config.threads);
  torch::manual_seed(config.seed);
  const ComputeData compute_data = load_compute_data(config);
  const std::optional<CostData> comm_data = load_comm_data(config);
  spdlog::info("training on {} compute samples and {} from {}", compute_data.data.compute.size(),
               comm_data ? fmt::format("{} comm samples", comm_data->comm.size())
                         : fmt::format("the communication model of {}", config.comm_from),
               config.data_dir);
  ComputePart compute = train_compute_part(compute_data.data, config);
  CommPart comm = comm_part(comm_data, compute_data.data, config, compute.spec);

  // Write the directory, then evaluate through the same loading and inference the planner uses.
  nlohmann::json meta = model_meta(config, compute_data, compute, comm, comm_data.has_value());
  save_model_directory(config.out_dir, meta, compute.net, comm.net);
  meta["metrics"] = test_metrics(config, compute_data.data, compute.split, comm, comm_data.has_value());
  meta["training"]["seconds"] =
      std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  write_file_atomically((fs::path(config.out_dir) / "meta.json").string(), meta.dump(2) + "\n");
  return meta;
}

nlohmann::json evaluate_cost_model(const std::string& model_dir, const std::string& data_dir,
                                   const std::string& hardware) {
  std::unique_ptr<NeuralCostModel> model = load_cost_model(model_dir);
  std::optional<CommFabric> fabric;
  if (!hardware.empty()) {
    HardwareProfile profile = load_hardware_profile(hardware);
    fabric =
        fabric_of(profile, model->comm_spec().form == CommForm::kHierarchical ? model->comm_spec().fabric.batch_size
                                                                              : kScaleFreeCommBatch);
    model->plan_for_hardware(*fabric);
  }
  nlohmann::json out = nlohmann::json::object();
  if (std::optional<CostData> data = find_cost_data(data_dir, CostKind::kCompute)) {
    // Metrics over no samples would read as a perfect model.
    if (data->compute.empty()) throw InputError(fmt::format("{}: its compute cost data holds no samples", data_dir));
    std::vector<std::vector<ShardFeatures>> sets;
    std::vector<double> measured;
    for (const auto& s : data->compute) {
      sets.push_back(s.shards);
      measured.push_back(undisturbed_latency_ms(s));
    }
    out["compute"] = compute_metrics(model->predict_compute(sets), measured).to_json();
  }
  if (std::optional<CostData> data = find_cost_data(data_dir, CostKind::kComm)) {
    if (data->comm.empty()) throw InputError(fmt::format("{}: its comm cost data holds no samples", data_dir));
    out["comm"] = comm_metrics(*model, data->comm);
    if (fabric) out["comm_structure_alone"] = structure_metrics(*fabric, data->comm);
  }
  if (out.empty()) throw InputError(fmt::format("{}: holds no compute or comm cost data", data_dir));
  return out;
}

}  // namespace shardplan
