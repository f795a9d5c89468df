// shard-plan calibrate: measure plan-like shard sets here, fine-tune the base model's compute part on them.
#include "shardplan/torch/calibrate.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "model_files.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/cost_model/metrics.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/costs/compute_collector.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/costs/timing_memory.hpp"
#include "shardplan/torch/compute_benchmark.hpp"
#include "training.hpp"

namespace shardplan {

namespace {

namespace fs = std::filesystem;
using namespace training;

constexpr uint64_t kTraceStream = 0x7472616365ull;  // "trace": index traces of sample i
constexpr uint64_t kValidationStream = 11;
constexpr uint64_t kShuffleStream = 12;
constexpr double kValidationFraction = 0.15;
constexpr int64_t kMinTrainSamples = 10;
constexpr int64_t kMinHeldOutSamples = 3;
// Measuring stops early enough to leave this share of --minutes (at least kMinTuneSeconds) to fine-tune.
constexpr double kTuneShare = 0.15;
constexpr double kMinTuneSeconds = 10.0;
// The timed all-to-alls, beside the compute sets in the calibration directory.
constexpr const char* kCommCalibrationFile = "comm-plans.json";

double elapsed_seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

nlohmann::json collection_meta(const CalibrateConfig& config, const std::string& base_identity) {
  // What a sample means: a resume must not mix sets drawn or timed another way.
  nlohmann::json settings = {{"sampler", "calibration/1: plan devices and random draws, alternating"},
                             {"pool", config.pool_path},
                             {"base_model", base_identity},
                             {"seed", config.sampling.seed},
                             {"max_tables", config.sampling.max_tables},
                             {"memory_cap_bytes", config.sampling.memory_cap_bytes}};
  return compute_collection_meta(std::move(settings), config.bench, config.sampling.seed, config.command_line,
                                 torch_version());
}

void check_config(const CalibrateConfig& c) {
  if (c.samples < kMinTrainSamples + kMinHeldOutSamples || c.samples > 1'000'000) {
    throw SettingError(
        "samples", fmt::format("must be in [{}, 1000000], got {}", kMinTrainSamples + kMinHeldOutSamples, c.samples));
  }
  if (!(c.minutes > 0.0) || c.minutes > 7 * 24 * 60)
    throw SettingError("minutes", fmt::format("must be in (0, 10080], got {}", c.minutes));
  if (!(c.holdout_fraction >= 0.05 && c.holdout_fraction <= 0.5)) {
    throw SettingError("held-out fraction", fmt::format("must be in [0.05, 0.5], got {}", c.holdout_fraction));
  }
  if (c.sampling.max_tables < 1 || c.sampling.max_tables > 1000) {
    throw SettingError("tables per set", fmt::format("must be in [1, 1000], got {}", c.sampling.max_tables));
  }
  if (c.comm_ranks != 0) {
    if (c.comm_ranks < 2 || c.comm_ranks > 64)
      throw SettingError("all-to-all ranks", fmt::format("must be 0 or in [2, 64], got {}", c.comm_ranks));
    // Fewer plans could leave too few to fit after the hold-out, found only after timing them.
    if (c.comm_plans < 8 || c.comm_plans > 100000) {
      throw SettingError("all-to-all plans", fmt::format("must be in [8, 100000], got {}", c.comm_plans));
    }
    if (!c.hardware.empty()) {
      throw InputError(
          "--comm-ranks times this host's all-to-all, --hardware plans it on another's links: pass one of them");
    }
    if (c.bench.device != "cpu") {
      throw InputError(
          fmt::format("--comm-ranks: times Gloo ranks on this host's CPU, not the all-to-all of --device {}; "
                      "time GPUs' collectives with collect-costs comm",
                      c.bench.device));
    }
  }
  if (c.epochs < 1 || c.patience < 1 || !(c.learning_rate > 0) || c.batch_size < 1 || c.threads < 1) {
    throw InputError("--epochs, --patience, --lr, --train-batch-size and --train-threads must be positive");
  }
}

// Measures samples up to config.samples or the time budget; returns what this run added.
void measure_samples(const std::vector<Table>& pool, const CalibrateConfig& config,
                     const std::shared_ptr<const CostModel>& base, const ComputeTimer& timer, CostDataWriter& writer,
                     std::chrono::steady_clock::time_point started, CalibrateOutcome& outcome) {
  const double measure_seconds = config.minutes * 60.0 - std::max(kMinTuneSeconds, kTuneShare * config.minutes * 60.0);
  install_interrupt_handlers();
  Progress progress("calibration sets", config.samples, outcome.samples, config.quiet);
  for (int64_t i = outcome.samples; i < config.samples; ++i) {
    if (interrupt_requested()) {
      outcome.interrupted = true;
      break;
    }
    if (elapsed_seconds(started) >= measure_seconds) {
      outcome.out_of_time = true;
      break;
    }
    CalibrationSet set = draw_calibration_set(pool, config.sampling, base, i);
    ComputeTiming timing =
        timer(set.shards, derive_seed(config.sampling.seed ^ kTraceStream, static_cast<uint64_t>(i)));
    ComputeSample sample;
    for (const auto& shard : set.shards) sample.shards.push_back(shard_features(shard, shard.dim));
    sample.latency_ms = timing.median_ms;
    sample.iterations_ms = timing.iterations_ms;
    nlohmann::json line = compute_sample_to_json(sample);
    line["origin"] = set.origin;
    writer.append(line);
    ++outcome.samples;
    ++outcome.measured_now;
    progress.update(i + 1, fmt::format("{} shards {:.2f} ms ({})", set.shards.size(), timing.median_ms, set.origin));
  }
  progress.finish();
}

nlohmann::json metrics_on(const NeuralCostModel& model, const std::vector<ComputeSample>& samples) {
  std::vector<std::vector<ShardFeatures>> sets;
  std::vector<double> measured;
  for (const auto& s : samples) {
    sets.push_back(s.shards);
    measured.push_back(undisturbed_latency_ms(s));
  }
  return compute_metrics(model.predict_compute(sets), measured).to_json();
}

NeuralCostModel model_of(const ComputeNet& net, const ModelFiles& base) {
  ComputeModelSpec spec = base.compute_spec;
  spec.shard_net = net->shard_net->to_plain();
  spec.alone = net->alone->to_plain();
  spec.head = net->head->to_plain();
  spec.step_cost_ms = static_cast<float>(net->step_cost_ms());
  return NeuralCostModel("calibrating", spec, base.comm_spec);
}

// Scales every device's prediction by exp(offset): the alone latencies through the alone layer's bias, the
// per-step cost through its log. A machine that is uniformly faster or slower needs nothing more.
void shift_log_latency(ComputeNet& net, double offset) {
  torch::NoGradGuard no_grad;
  net->alone->parameters().back().add_(offset);  // the alone layer's bias
  if (net->log_step_ms.defined()) net->log_step_ms.add_(offset);
}

}  // namespace

CalibrateOutcome calibrate_cost_model(const std::vector<Table>& pool, const CalibrateConfig& config,
                                      const ComputeTimer& timer_or_default, const CommTimer& comm_timer) {
  check_config(config);
  const auto started = std::chrono::steady_clock::now();
  ModelFiles base = load_model_files(config.base_dir);
  // Read before minutes of measuring, so that a bad --hardware fails at once.
  std::optional<HardwareProfile> links;
  if (!config.hardware.empty()) links = load_hardware_profile(config.hardware);
  std::shared_ptr<const CostModel> base_model = load_cost_model(config.base_dir);
  const ModelHardware base_hardware = base_model->hardware();
  const std::string base_identity = fmt::format("{} ({:016x})", config.base_dir, fnv1a_hash(base.meta.dump()));

  const ComputeTimer timer = timer_or_default ? timer_or_default : compute_timer(config.bench);
  prepare_memory_for_timing();  // before the metadata records the policy
  const fs::path data_dir = fs::path(config.out_dir) / kCalibrationDataDir;
  CalibrateOutcome outcome;
  // The all-to-alls first: a few dozen plans in one spawn of the ranks, then the compute sets fill the time.
  std::optional<CommCalibrationData> comm_data;
  std::optional<CommCalibrationFit> comm_fit;
  CommCalibrationConfig comm_config;
  if (config.comm_ranks > 0) {
    if (!comm_timer) throw std::logic_error("calibrate_cost_model: comm_ranks needs a comm timer");
    if (base.comm_spec.structure_only) {
      throw InputError(
          fmt::format("--comm-ranks: the all-to-all of {} is a hardware profile's structure, not a "
                      "timed net to correct; start from a model whose comm data was timed (--base)",
                      config.base_dir));
    }
    comm_config.world_size = config.comm_ranks;
    // The batch the base's comm net predicts at (a scale-free net's is fixed), not the compute sets' batch:
    // a batch ratio must not pass for a correction.
    comm_config.batch_size =
        base.comm_spec.form == CommForm::kHierarchical ? base.comm_spec.fabric.batch_size : kScaleFreeCommBatch;
    comm_config.plans = config.comm_plans;
    comm_config.holdout_fraction = config.holdout_fraction;
    comm_config.sampling = config.sampling;
    comm_config.data_path = (data_dir / kCommCalibrationFile).string();
    comm_config.settings = {{"sampler", "comm-calibration/1: plans of drawn tasks, each planner in turn"},
                            {"pool", config.pool_path},
                            {"base_model", base_identity},
                            {"seed", config.sampling.seed},
                            {"memory_cap_bytes", config.sampling.memory_cap_bytes},
                            {"world_size", comm_config.world_size},
                            {"batch_size", comm_config.batch_size}};
    comm_data = time_calibration_plans(pool, comm_config, base_model, comm_timer);
    if (comm_data->interrupted) {
      outcome.interrupted = true;
      outcome.comm_untimed = true;
      return outcome;
    }
    // Fitted now, on the base's comm net as it was trained (it does not depend on the compute part): too
    // few plans are refused before minutes of compute sets.
    CommModelSpec raw_spec = base.comm_spec;
    raw_spec.correction = CommCorrection{};
    const NeuralCostModel raw("calibrating", base.compute_spec, raw_spec);
    comm_fit = fit_comm_calibration(raw, base.comm_spec.correction, *comm_data);
    if (comm_fit->kept_base) {
      spdlog::warn(
          "calibrate: the all-to-all correction fitted here does not beat the base model on the held-out "
          "plans ({:.1f}% against {:.1f}% per device); the base's comm is kept",
          comm_fit->after.total_mape_percent, comm_fit->before.total_mape_percent);
    }
  }
  {
    CostDataWriter writer(data_dir.string(), collection_meta(config, base_identity));
    outcome.samples = writer.existing_samples();
    if (outcome.samples > 0) spdlog::info("{}: resuming after {} measured sets", data_dir.string(), outcome.samples);
    measure_samples(pool, config, base_model, timer, writer, started, outcome);
  }
  if (outcome.interrupted) return outcome;
  if (outcome.out_of_time) {
    spdlog::warn("--minutes {:g}: measured {} of {} sets in the time budget; fine-tuning on those (re-run to add more)",
                 config.minutes, outcome.samples, config.samples);
  }

  // Held-out part by sample index (stable across resumes), the rest for fine-tuning.
  CostData data = load_cost_data(data_dir.string(), CostKind::kCompute);
  std::vector<ComputeSample> held_out, tuning;
  for (std::size_t i = 0; i < data.compute.size(); ++i) {
    (is_held_out(config.sampling.seed, static_cast<int64_t>(i), config.holdout_fraction) ? held_out : tuning)
        .push_back(data.compute[i]);
  }
  drop_disturbed(tuning, 0.3);
  if (static_cast<int64_t>(tuning.size()) < kMinTrainSamples ||
      static_cast<int64_t>(held_out.size()) < kMinHeldOutSamples) {
    throw InputError(
        fmt::format("calibrate: {} sets to fine-tune on and {} held out are too few (need {} and {}); "
                    "raise --minutes or --samples and re-run to resume",
                    tuning.size(), held_out.size(), kMinTrainSamples, kMinHeldOutSamples));
  }

  at::set_num_threads(config.threads);
  torch::manual_seed(config.sampling.seed);
  NeuralCostModel before_model = model_of(base.compute, base);
  const nlohmann::json before = metrics_on(before_model, held_out);

  // 1. The machine's overall speed: the median log ratio of measured to predicted over the tuning sets.
  // Not the mean: a disturbed set (another process, a page-out) only ever measures slower, and a few of
  // them pulled the mean's scale 8% past the held-out sets' median on this VM (docs/calibration.md).
  ComputeSet set = compute_set(tuning);
  std::vector<double> predicted = before_model.predict_compute([&] {
    std::vector<std::vector<ShardFeatures>> sets;
    for (const auto& s : tuning) sets.push_back(s.shards);
    return sets;
  }());
  std::vector<double> log_ratios;
  for (std::size_t i = 0; i < predicted.size(); ++i)
    log_ratios.push_back(std::log(set.latency_ms[i] / std::max(1e-6, predicted[i])));
  const double offset = median(log_ratios);
  ComputeNet& net = base.compute;
  shift_log_latency(net, offset);
  const nlohmann::json after_offset = metrics_on(model_of(net, base), held_out);

  // 2. Fine-tune every weight from there, keeping the base normalisation, stopping on a validation part.
  // The loss is the absolute log error, MAPE's own measure and, like the median, not pulled by the few
  // sets a disturbance slowed: with the squared error, fine-tuning undid the median's scale here.
  Split split = split_indices(set.latency_ms.size(), kValidationFraction, 0.0, config.sampling.seed, kValidationStream);
  const Normaliser& norm = base.compute_spec.features;
  ComputeBatch validation = compute_batch(set, split.validation, norm);
  auto validation_loss = [&] {
    torch::NoGradGuard no_grad;
    return torch::l1_loss(net->forward(validation.x, validation.device, validation.devices), validation.target)
        .item<double>();
  };
  const double start_loss = validation_loss();
  TrainSettings settings;
  settings.epochs = config.epochs;
  settings.patience = config.patience;
  settings.learning_rate = config.learning_rate;
  settings.batch_size = config.batch_size;
  settings.seed = config.sampling.seed;
  settings.quiet = config.quiet;
  settings.time_limit_seconds = std::max(1.0, config.minutes * 60.0 - elapsed_seconds(started) - 2.0);
  TrainOutcome tuned = train(
      net, split.train.size(),
      [&](const std::vector<std::size_t>& batch) {
        ComputeBatch b = compute_batch(set, pick(split.train, batch), norm);
        return torch::l1_loss(net->forward(b.x, b.device, b.devices), b.target);
      },
      validation_loss, settings, "fine-tuning", kShuffleStream, start_loss);
  NeuralCostModel after_model = model_of(net, base);
  const nlohmann::json after = metrics_on(after_model, held_out);

  // A base model measured on this very machine may already fit it better than a fine-tuning on a few
  // hundred noisy sets: the user must hear it rather than find a worse model under a new name.
  const bool base_was_better = after["mape_percent"].get<double>() > before["mape_percent"].get<double>();
  if (base_was_better) {
    spdlog::warn(
        "calibrate: the base model {} fits this machine's held-out sets better ({:.1f}% MAPE) than the "
        "calibrated one ({:.1f}%); keep planning with the base, or calibrate again with more --samples",
        config.base_dir, before["mape_percent"].get<double>(), after["mape_percent"].get<double>());
  }

  // 3. The new model directory: the base's meta with this machine's compute, the base's comm kept (and
  // corrected by this host's timings with comm_ranks).
  const nlohmann::json& source_meta = data.meta;
  nlohmann::json meta = base.meta;
  meta["name"] = fs::path(config.out_dir).filename().string();
  meta["compute"]["step_cost_ms"] = net->step_cost_ms();
  nlohmann::json comm_hardware = hardware_to_json(base_hardware).value("comm", nlohmann::ordered_json::object());
  comm_hardware["from_model"] = config.base_dir;
  if (links) {
    plan_comm_on_profile(meta["comm"], comm_hardware, *links, config.bench.batch_size, config.base_dir);
  } else {
    match_comm_batch(meta["comm"], config.bench.batch_size, config.base_dir);
  }
  std::string comm_text =
      links ? fmt::format(
                  "the hierarchical estimate on profile {}'s links at batch {}, not measured: "
                  "compute-only calibration cannot time all-to-alls",
                  links->name, config.bench.batch_size)
            : fmt::format("kept from the base model {}: compute-only calibration cannot time all-to-alls",
                          config.base_dir);
  if (comm_fit) {
    if (!comm_fit->kept_base) {
      meta["comm"]["correction"] = comm_correction_to_json(comm_fit->correction);
      comm_hardware["corrected_on"] = fmt::format("{} ranks of {} ({})", config.comm_ranks,
                                                  source_meta.value("host", ""), source_meta.value("device_model", ""));
    }
    const std::size_t plans = comm_data->tuning.size() + comm_data->held_out.size();
    comm_text = comm_fit->kept_base
                    ? fmt::format(
                          "the base model {}'s net, kept: a correction fitted to {} plans timed on {} ranks "
                          "here did no better on the held-out ones",
                          config.base_dir, plans, config.comm_ranks)
                    : fmt::format("the base model {}'s net, corrected by {} plans timed on {} ranks here",
                                  config.base_dir, plans, config.comm_ranks);
  }
  meta["hardware"] = {{"compute",
                       {{"device", source_meta.value("device", "")},
                        {"device_model", source_meta.value("device_model", "")},
                        {"kernel", config.bench.kernel},
                        {"host", source_meta.value("host", "")},
                        {"date", source_meta.value("date", "")},
                        {"batch_size", config.bench.batch_size}}},
                      {"comm", comm_hardware},
                      {"calibrated_on", utc_now()}};
  const double seconds = elapsed_seconds(started);
  meta["calibration"] = {{"base_model", base_identity},
                         {"base_hardware", describe_hardware(base_hardware)},
                         {"data", data_dir.string()},
                         {"samples", data.compute.size()},
                         {"tuning_samples", set.latency_ms.size()},
                         {"held_out_samples", held_out.size()},
                         {"holdout_fraction", config.holdout_fraction},
                         {"before", before},
                         {"after_scale_only", after_offset},
                         {"after", after},
                         {"base_was_better", base_was_better},
                         {"scale", std::exp(offset)},
                         {"epochs", tuned.epochs_run},
                         {"best_epoch", tuned.best_epoch},
                         {"stopped_by_time", tuned.stopped_by_time},
                         {"learning_rate", config.learning_rate},
                         {"comm", comm_text},
                         {"seconds", std::round(seconds)},
                         {"command", config.command_line}};
  meta["metrics"]["compute"] = after;
  meta["metrics"]["compute_note"] = "on the calibration's held-out sets";
  if (comm_fit) {
    nlohmann::json fit = comm_fit->to_json();
    fit["world_size"] = config.comm_ranks;
    fit["batch_size"] = comm_config.batch_size;
    fit["tuning_plans"] = comm_data->tuning.size();
    fit["held_out_plans"] = comm_data->held_out.size();
    fit["data"] = comm_config.data_path;
    meta["calibration"]["comm_fit"] = fit;
  }
  save_model_directory(config.out_dir, meta, net, base.comm);
  outcome.meta = meta;
  spdlog::info(
      "calibrated {} on {} sets in {:.0f} s: held-out MAPE {:.1f}% -> {:.1f}% (scale alone {:.1f}%), Spearman "
      "{:.3f} -> {:.3f}",
      config.out_dir, data.compute.size(), seconds, before["mape_percent"].get<double>(),
      after["mape_percent"].get<double>(), after_offset["mape_percent"].get<double>(), before["spearman"].get<double>(),
      after["spearman"].get<double>());
  if (comm_fit) {
    spdlog::info("all-to-all on {} held-out plans: per-device MAPE of forward plus backward {:.1f}% -> {:.1f}%{}",
                 comm_data->held_out.size(), comm_fit->before.total_mape_percent, comm_fit->after.total_mape_percent,
                 comm_fit->kept_base ? " (not kept)" : "");
  }
  return outcome;
}

}  // namespace shardplan
