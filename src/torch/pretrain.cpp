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

CommTrained train_comm(const CommRows& rows, const std::vector<std::size_t>& train_rows,
                       const std::vector<std::size_t>& val_rows, const CommFabric& fabric, const PretrainConfig& config,
                       const std::string& what, uint64_t shuffle_stream) {
  CommTrained t;
  t.spec.form = CommForm::kHierarchical;
  t.spec.fabric = fabric;
  std::vector<HierCommFeatureVector> train_features;
  std::array<double, 2> sum{}, sq{};
  t.spec.input_min.assign(kHierCommFeatures, std::numeric_limits<float>::max());
  t.spec.input_max.assign(kHierCommFeatures, std::numeric_limits<float>::lowest());
  t.spec.backward_without_delays = true;
  for (std::size_t r : train_rows) {
    // The normalisation and the clamping range cover what either output sees.
    for (const HierCommFeatureVector& row : {rows.features[r], backward_row(rows.features[r])}) {
      train_features.push_back(row);
      for (std::size_t k = 0; k < static_cast<std::size_t>(kHierCommFeatures); ++k) {
        t.spec.input_min[k] = std::min(t.spec.input_min[k], row[k]);
        t.spec.input_max[k] = std::max(t.spec.input_max[k], row[k]);
      }
    }
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
  MonotoneNet net(kHierCommFeatures, kHierCommMonotoneInputs, kCommBends, kCommFreeUnits, 2);
  struct Batch {
    torch::Tensor forward_x, backward_x, target;
  };
  auto batch_of = [&](const std::vector<std::size_t>& row_ids) {
    std::vector<const HierCommFeatureVector*> forward_rows, backward_rows;
    std::vector<HierCommFeatureVector> cleared;
    cleared.reserve(row_ids.size());
    std::vector<float> target;
    for (std::size_t r : row_ids) {
      forward_rows.push_back(&rows.features[r]);
      cleared.push_back(backward_row(rows.features[r]));
      backward_rows.push_back(&cleared.back());
      for (int k = 0; k < 2; ++k) target.push_back((rows.targets[r][k] - t.spec.target_mean[k]) / t.spec.target_std[k]);
    }
    return Batch{normalised_tensor(forward_rows, t.spec.features), normalised_tensor(backward_rows, t.spec.features),
                 torch::tensor(target).view({static_cast<int64_t>(row_ids.size()), 2})};
  };
  // The forward output from the rows with their delays, the backward one from the rows without.
  auto loss_of = [&](const Batch& b) {
    return 0.5 * (torch::l1_loss(net->forward(b.forward_x).select(1, 0), b.target.select(1, 0)) +
                  torch::l1_loss(net->forward(b.backward_x).select(1, 1), b.target.select(1, 1)));
  };
  const Batch validation = batch_of(val_rows);
  TrainSettings comm_settings = train_settings(config);
  comm_settings.batch_size = config.batch_size * 8;  // rows are devices: a sample contributes W of them
  t.outcome = train(
      net, train_rows.size(),
      [&](const std::vector<std::size_t>& batch) {
        std::vector<std::size_t> ids;
        for (std::size_t i : batch) ids.push_back(train_rows[i]);
        return loss_of(batch_of(ids));
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

// Each sample is predicted with its own layout of ranks on hosts (CommSample::devices_per_host), once.
nlohmann::json comm_metrics(NeuralCostModel& model, const std::vector<CommSample>& samples) {
  std::vector<double> fw_pred, fw_true, bw_pred, bw_true, ar_pred, ar_true, rw_pred, rw_true;
  // Per world size too: one size's bias hides in the pooled MAPE.
  std::map<int, std::array<std::vector<double>, 4>> by_size;  // fw predicted, fw measured, bw predicted, bw measured
  std::map<int, SlowestDevices> slowest_by_size;
  for (const auto& sample : samples) {
    std::vector<double> fw, bw;
    model.set_devices_per_host(sample.devices_per_host > 0 ? sample.devices_per_host : sample.world_size);
    model.predict_comm(model_dim_sums(sample), sample.delays_ms, fw, bw);
    fw_pred.insert(fw_pred.end(), fw.begin(), fw.end());
    bw_pred.insert(bw_pred.end(), bw.begin(), bw.end());
    fw_true.insert(fw_true.end(), sample.fw_ms.begin(), sample.fw_ms.end());
    bw_true.insert(bw_true.end(), sample.bw_ms.begin(), sample.bw_ms.end());
    if (times_alltoall_alone(sample)) {
      auto& own = by_size[sample.world_size];
      own[0].insert(own[0].end(), fw.begin(), fw.end());
      own[1].insert(own[1].end(), sample.fw_ms.begin(), sample.fw_ms.end());
      own[2].insert(own[2].end(), bw.begin(), bw.end());
      own[3].insert(own[3].end(), sample.bw_ms.begin(), sample.bw_ms.end());
      slowest_by_size[sample.world_size].add(sample, fw, bw);
    } else if (sample.allreduce_floats > 0) {
      // A data-parallel all-reduce timed too (given workloads): every rank against the model's.
      const double predicted =
          model.allreduce_ms(4.0 * static_cast<double>(sample.allreduce_floats), sample.world_size);
      for (double ms : sample.allreduce_ms) {
        ar_pred.push_back(predicted);
        ar_true.push_back(ms);
      }
    } else if (sample.rw_dim > 0) {
      // A plan with row-wise tables: its step (forward plus backward, mean over ranks) as the model scores
      // it, its width in the all-to-all plus the row-wise collectives' charge.
      if (fw.empty()) continue;
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
  }
  nlohmann::json metrics = {{"fw", compute_metrics(fw_pred, fw_true).to_json()},
                            {"bw", compute_metrics(bw_pred, bw_true).to_json()}};
  SlowestDevices slowest;
  for (const auto& [world_size, own] : slowest_by_size) slowest.append(own);
  slowest.into(metrics);
  if (by_size.size() > 1) {
    for (const auto& [world_size, own] : by_size) {
      metrics["by_world_size"][std::to_string(world_size)] = {{"fw", compute_metrics(own[0], own[1]).to_json()},
                                                              {"bw", compute_metrics(own[2], own[3]).to_json()}};
    }
  }
  // Within one world size only: sizes differ in how widths reach the links.
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
  if (!ar_true.empty()) metrics["allreduce"] = compute_metrics(ar_pred, ar_true).to_json();
  if (!rw_true.empty()) metrics["rowwise"] = compute_metrics(rw_pred, rw_true).to_json();
  return metrics;
}

// The structure alone on the same samples (forward: the wait plus the structural time): what the learned
// part adds is the difference.
nlohmann::json structure_metrics(const CommFabric& fabric, const std::vector<CommSample>& samples) {
  std::vector<double> fw_pred, fw_true, bw_pred, bw_true, structure;
  SlowestDevices slowest;
  for (const auto& sample : samples) {
    hierarchical_alltoall_ms(fabric_for_sample(fabric, sample), model_dim_sums(sample), structure);
    std::vector<double> waits = comm_waits(sample.delays_ms);
    std::vector<double> fw(structure.size());
    for (std::size_t r = 0; r < structure.size(); ++r) fw[r] = waits[r] + structure[r];
    fw_pred.insert(fw_pred.end(), fw.begin(), fw.end());
    bw_pred.insert(bw_pred.end(), structure.begin(), structure.end());
    fw_true.insert(fw_true.end(), sample.fw_ms.begin(), sample.fw_ms.end());
    bw_true.insert(bw_true.end(), sample.bw_ms.begin(), sample.bw_ms.end());
    if (times_alltoall_alone(sample)) slowest.add(sample, fw, structure);
  }
  nlohmann::json metrics = {{"fw", compute_metrics(fw_pred, fw_true).to_json()},
                            {"bw", compute_metrics(bw_pred, bw_true).to_json()}};
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
        fmt::format("comm data: sources were collected with different --batch-size ({}); train on one batch size",
                    fmt::join(batches, ", ")));
  }
  return batches.empty() ? kScaleFreeCommBatch : *batches.begin();
}

// The structure's figures: the --hardware profile's, or fitted to the data's samples (all but
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
      "inter-host {} (mean |log error| {:.3f}); a profile with these figures can be passed as --hardware",
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

CommPart train_comm_part(const CostData& all_comm, const PretrainConfig& config, const ComputeModelSpec& compute_spec) {
  CommPart part;
  // Samples that timed an all-reduce (given workloads) fit the all-reduce only. Samples of plans with
  // row-wise tables, and the samples paired with them (tools/rowwise-workloads), fit the row-wise
  // collectives only (extra_collectives_ms charges them apart); those of plans with table-row-wise tables
  // fit nothing. The all-to-all part learns from the plain ones, so adding any of these leaves it as it was.
  CostData comm_data;
  comm_data.meta = all_comm.meta;
  std::vector<CommSample> allreduce_samples;
  std::vector<char> is_reference;
  const std::vector<RowwisePair> rowwise = rowwise_pairs(all_comm.comm, &is_reference);
  std::size_t row_wise_samples = 0;
  for (std::size_t i = 0; i < all_comm.comm.size(); ++i) {
    const CommSample& s = all_comm.comm[i];
    if (s.allreduce_floats > 0) {
      allreduce_samples.push_back(s);
    } else if (s.rw_dim > 0 || !s.host_rw_dims.empty() || is_reference[i]) {
      ++row_wise_samples;
    } else {
      comm_data.comm.push_back(s);
    }
  }
  if (row_wise_samples > 0) {
    spdlog::info(
        "comm data: {} samples of plans with row-wise or table-row-wise tables and their pairs are left "
        "out of the all-to-all's training ({} row-wise pairs fit the row-wise collectives)",
        row_wise_samples, rowwise.size());
  }
  if (comm_data.comm.empty())
    throw InputError("the comm cost data holds only all-reduce samples: no all-to-all to learn");
  const CommFabric fabric = comm_fabric(comm_data, config);
  CommRows rows = comm_rows(comm_data.comm, fabric);
  Split comm_split = split_indices(comm_data.comm.size(), config.validation_fraction, config.test_fraction, config.seed,
                                   kCommSplitStream);
  CommTrained comm =
      train_comm(rows, rows_of_samples(rows, comm_split.train), rows_of_samples(rows, comm_split.validation), fabric,
                 config, "comm model", kCommShuffleStream);

  // Generalisation across device counts: retrain without one world size, test on it.
  std::set<int> world_sizes;
  for (const auto& s : comm_data.comm) world_sizes.insert(s.world_size);
  int holdout = config.holdout_world_size;
  if (holdout == 0 && world_sizes.size() >= 3)
    holdout = *std::next(world_sizes.begin(), static_cast<std::ptrdiff_t>(world_sizes.size() / 2));
  if (holdout != 0 && world_sizes.count(holdout)) {
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
    part.holdout_metrics = comm_metrics(probe, held);
    part.holdout_metrics["world_size"] = holdout;
    part.holdout_metrics["structure_alone"] = structure_metrics(fabric_without, held);
  }
  NeuralCostModel trained("trained", compute_spec, comm.spec);
  part.test_metrics = comm_metrics(trained, pick(comm_data.comm, comm_split.test));
  part.structure_metrics = structure_metrics(fabric, pick(comm_data.comm, comm_split.test));
  part.net = comm.net;
  part.outcome = comm.outcome;
  const DenseLayer& hidden = comm.spec.net.layers.front();
  part.meta_section = {{"form", kHierarchicalCommForm},
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
  const AllreduceFit allreduce = fit_allreduce(allreduce_samples);  // empty without such samples
  if (!allreduce_samples.empty()) {
    std::vector<double> structure, fitted, measured;
    for (const auto& s : allreduce_samples) {
      CommFabric own = fabric;
      own.devices_per_host = s.devices_per_host > 0 ? s.devices_per_host : s.world_size;
      const double bytes = 4.0 * static_cast<double>(s.allreduce_floats);
      structure.push_back(ring_allreduce_ms(own, bytes, s.world_size));
      fitted.push_back(fitted_allreduce_ms(allreduce, own, bytes, s.world_size));
      measured.push_back(measured_allreduce_ms(s));
    }
    part.meta_section["allreduce"] = allreduce_fit_to_json(allreduce);
    part.meta_section["allreduce"]["metrics"] = {{"structure_alone", compute_metrics(structure, measured).to_json()},
                                                 {"fitted", compute_metrics(fitted, measured).to_json()}};
    spdlog::info("all-reduce fitted to {} samples: MAPE {:.1f}% (the ring structure alone: {:.1f}%)",
                 allreduce_samples.size(), compute_metrics(fitted, measured).mape,
                 compute_metrics(structure, measured).mape);
  }
  if (!rowwise.empty()) {
    const RowwiseFit fit = fit_rowwise(rowwise);
    part.meta_section["rowwise"] = rowwise_fit_to_json(fit);
    // Against the latency-only charge it replaces (the fitted all-reduce of 4 bytes), on the same pairs.
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
    part.meta_section["rowwise"]["metrics"] = {{"pairs", rowwise.size()},
                                               {"mean_abs_error_ms", fitted_error / n},
                                               {"latency_only_mean_abs_error_ms", latency_error / n}};
    spdlog::info("row-wise collectives fitted to {} pairs: mean |error| {:.2f} ms (latency alone: {:.2f} ms)",
                 rowwise.size(), fitted_error / n, latency_error / n);
  }
  part.hardware = comm_hardware(comm_data.meta, world_sizes);
  part.data = {{"samples", comm_data.comm.size()},
               {"train", comm_split.train.size()},
               {"validation", comm_split.validation.size()},
               {"test", comm_split.test.size()}};
  if (!allreduce_samples.empty()) part.data["allreduce_samples"] = allreduce_samples.size();
  return part;
}

}  // namespace

nlohmann::json pretrain_cost_models(const PretrainConfig& config) {
  if (config.epochs < 1 || config.batch_size < 1 || config.learning_rate <= 0 || config.threads < 1) {
    throw InputError("--epochs, --batch-size, --lr and --threads must be positive");
  }
  if (config.validation_fraction <= 0 || config.test_fraction <= 0 ||
      config.validation_fraction + config.test_fraction >= 0.9) {
    throw InputError(fmt::format("--val-fraction and --test-fraction must be positive and sum below 0.9, got {} and {}",
                                 config.validation_fraction, config.test_fraction));
  }
  auto started = std::chrono::steady_clock::now();
  at::set_num_threads(config.threads);
  torch::manual_seed(config.seed);

  CostData compute_data = load_cost_data(config.data_dir, CostKind::kCompute);
  std::size_t collected = compute_data.compute.size();
  std::size_t dropped = drop_disturbed(compute_data.compute, config.max_iteration_spread);
  if (config.max_iteration_spread > 0) {
    spdlog::info("left out {} of {} compute samples whose timed iterations spread over {:.0f}% of their median",
                 dropped, collected, 100 * config.max_iteration_spread);
  }
  // Compute-only data (one GPU cannot time all-to-alls) takes its communication part from another model.
  std::optional<CostData> comm_data;
  if (config.comm_from.empty()) {
    comm_data = find_cost_data(config.data_dir, CostKind::kComm);
    if (!comm_data) {
      throw InputError(
          fmt::format("{}: no comm cost data to train the communication model; to train on compute "
                      "data alone, pass --comm-from MODEL_DIR (e.g. models/cpu-2core) to keep that "
                      "model's communication part",
                      config.data_dir));
    }
  }
  spdlog::info("training on {} compute samples and {} from {}", compute_data.compute.size(),
               comm_data ? fmt::format("{} comm samples", comm_data->comm.size())
                         : fmt::format("the communication model of {}", config.comm_from),
               config.data_dir);

  // Compute model.
  ComputeSet set = compute_set(compute_data.compute);
  Split split = split_indices(set.latency_ms.size(), config.validation_fraction, config.test_fraction, config.seed,
                              kComputeSplitStream);
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
        return torch::mse_loss(compute_net->forward(validation.x, validation.device, validation.devices),
                               validation.target)
            .item<double>();
      },
      train_settings(config), "compute model", kComputeShuffleStream);
  compute_spec.shard_net = compute_net->shard_net->to_plain();
  compute_spec.alone = compute_net->alone->to_plain();
  compute_spec.head = compute_net->head->to_plain();
  compute_spec.step_cost_ms = static_cast<float>(compute_net->step_cost_ms());
  compute_spec.latency_weighted_context = true;

  // Communication model on every collected world size (split by sample so no collective leaks across), or
  // the one of --comm-from.
  CommPart comm = comm_data ? train_comm_part(*comm_data, config, compute_spec) : comm_from_model(config.comm_from);
  if (!comm_data && !config.hardware.empty()) {
    plan_comm_on_profile(comm.meta_section, comm.hardware, load_hardware_profile(config.hardware),
                         collection_batch_size(compute_data.meta), config.comm_from);
    comm.data = {
        {"from_model", config.comm_from}, {"samples", 0}, {"structure", "profile " + profile_name(comm.meta_section)}};
    comm.test_metrics = nullptr;  // the net's metrics describe hardware the model no longer predicts for
    comm.holdout_metrics = nullptr;
  } else if (!comm_data) {
    match_comm_batch(comm.meta_section, collection_batch_size(compute_data.meta), config.comm_from);
  }

  // Write the directory, then evaluate through the same loading and plain-C++ inference the planner uses.
  nlohmann::json meta = {{"format", kModelFormat},
                         {"name", fs::path(config.out_dir).filename().string()},
                         {"feature_schema", kFeatureSchemaVersion},
                         {"hardware", {{"compute", compute_hardware(compute_data.meta)}, {"comm", comm.hardware}}},
                         {"compute",
                          {{"features", kComputeFeatures},
                           {"shard_layers", kShardWidths},
                           {"head_layers", kHeadWidths},
                           {"interaction_range", config.interaction_range},
                           {"step_cost_ms", compute_spec.step_cost_ms},
                           {"context", "latency-weighted mean embedding"},
                           {"feature_mean", compute_spec.features.mean},
                           {"feature_std", compute_spec.features.std},
                           {"target",
                            "log ms of the fastest timed iteration: log(sum of shards' ms x "
                            "exp(interaction_range x tanh(head)) + step_cost_ms)"},
                           {"weights", kComputeWeightsFile}}},
                         {"comm", comm.meta_section},
                         {"training",
                          {{"seed", config.seed},
                           {"threads", config.threads},
                           {"learning_rate", config.learning_rate},
                           {"batch_size", config.batch_size},
                           {"max_epochs", config.epochs},
                           {"patience", config.patience},
                           {"loss", "MSE on log latency (compute); L1 on standardised log transfer time (comm)"},
                           {"compute_epochs", compute_outcome.epochs_run},
                           {"compute_best_epoch", compute_outcome.best_epoch},
                           {"command", config.command_line}}},
                         {"data",
                          {{"dir", config.data_dir},
                           {"compute",
                            {{"provenance", data_provenance(first_source(compute_data.meta))},
                             {"collected", collected},
                             {"max_iteration_spread", config.max_iteration_spread},
                             {"samples", set.latency_ms.size()},
                             {"train", split.train.size()},
                             {"validation", split.validation.size()},
                             {"test", split.test.size()}}},
                           {"comm", comm.data}}}};
  if (comm_data) {
    meta["training"]["comm_epochs"] = comm.outcome.epochs_run;
    meta["training"]["comm_best_epoch"] = comm.outcome.best_epoch;
  } else {
    meta["training"]["comm_from"] = config.comm_from;
  }
  save_model_directory(config.out_dir, meta, compute_net, comm.net);

  std::unique_ptr<NeuralCostModel> loaded = load_cost_model(config.out_dir);
  std::vector<std::vector<ShardFeatures>> test_sets;
  std::vector<double> test_latency;
  for (std::size_t i : split.test) {
    test_sets.push_back(compute_data.compute[i].shards);
    test_latency.push_back(undisturbed_latency_ms(compute_data.compute[i]));
  }
  meta["metrics"] = {{"compute", compute_metrics(loaded->predict_compute(test_sets), test_latency).to_json()},
                     {"comm", comm.test_metrics},
                     {"comm_holdout", comm.holdout_metrics},
                     {"comm_structure_alone", comm.structure_metrics}};
  if (!comm_data) {
    meta["metrics"]["comm_source"] =
        comm.meta_section.value("structure_only", false)
            ? fmt::format("no model: the hierarchical estimate on profile {}'s links, not measured",
                          profile_name(comm.meta_section))
            : fmt::format("{} (its own test metrics)", config.comm_from);
  }
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
    if (fabric) out["comm_structure_alone"] = structure_metrics(*fabric, data->comm);
  }
  if (out.empty()) throw InputError(fmt::format("{}: holds no compute or comm cost data", data_dir));
  return out;
}

}  // namespace shardplan
