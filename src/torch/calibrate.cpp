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

void check_fine_tuning(const CalibrateConfig& c) {
  if (c.epochs < 1) throw SettingError("fine-tuning epochs", fmt::format("must be at least 1, got {}", c.epochs));
  if (c.patience < 1) {
    throw SettingError("fine-tuning patience", fmt::format("must be at least 1, got {}", c.patience));
  }
  if (!(c.learning_rate > 0)) {
    throw SettingError("fine-tuning learning rate", fmt::format("must be positive, got {}", c.learning_rate));
  }
  if (c.batch_size < 1)
    throw SettingError("fine-tuning batch", fmt::format("must be at least 1, got {}", c.batch_size));
  if (c.threads < 1) throw SettingError("fine-tuning threads", fmt::format("must be at least 1, got {}", c.threads));
}

// The ranks on which the all-to-alls are timed: the job's, or --comm-ranks of this host; 0: none.
int comm_world_size(const CalibrateConfig& c) {
  if (c.job.launched()) return c.job.world_size > 1 ? c.job.world_size : 0;
  return c.comm_ranks;
}

// Where the all-to-alls were timed, as the model's meta and messages say it.
std::string comm_ranks_text(const CalibrateConfig& c, const std::string& host) {
  if (!c.job.launched()) return fmt::format("{} ranks of {}", c.comm_ranks, host);
  return fmt::format("{} ranks, {} per host on {} host{} ({})", c.job.world_size, c.job.gpus_per_host, c.job.hosts(),
                     c.job.hosts() == 1 ? "" : "s", c.job.backend);
}

void check_job(const CalibrateConfig& c) {
  if (c.comm_ranks != 0) {
    throw SettingError("all-to-all ranks",
                       "a launched job times its own ranks' all-to-alls; --comm-ranks spawns "
                       "ranks of one host: drop it");
  }
  if (!c.sets_dir.empty()) {
    throw SettingError("calibration sets", "were timed elsewhere: fine-tune on them in one process, not a job");
  }
  if (c.job.world_size > 1 && !c.hardware.empty()) {
    throw SettingError("hardware profile", "a job times its own all-to-alls: a profile's links would replace them");
  }
  if (c.job.gpus_per_host < 1 || c.job.world_size % c.job.gpus_per_host != 0) {
    throw SettingError("GPUs per host",
                       fmt::format("must divide the world size {}, got {}", c.job.world_size, c.job.gpus_per_host));
  }
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
  if (!c.sets_dir.empty() && c.comm_ranks != 0) {
    throw SettingError("calibration sets",
                       "are timed elsewhere, and all-to-alls timed here would correct the comm model to another "
                       "host than theirs: calibrate the comm model in a run of its own");
  }
  if (c.job.launched()) check_job(c);
  // Fewer plans could leave too few to fit after the hold-out, found only after timing them.
  if (comm_world_size(c) > 0 && (c.comm_plans < 8 || c.comm_plans > 100000)) {
    throw SettingError("all-to-all plans", fmt::format("must be in [8, 100000], got {}", c.comm_plans));
  }
  if (c.comm_ranks != 0) {
    if (c.comm_ranks < 2 || c.comm_ranks > 64)
      throw SettingError("all-to-all ranks", fmt::format("must be 0 or in [2, 64], got {}", c.comm_ranks));
    if (!c.hardware.empty()) {
      throw SettingError("all-to-all ranks",
                         "times this host's all-to-all, and a hardware profile plans it on another's links: "
                         "calibrate with one of them");
    }
    if (c.bench.device != "cpu") {
      throw SettingError("all-to-all ranks",
                         fmt::format("times Gloo ranks on this host's CPU, not the all-to-all of the measuring device "
                                     "{}; time GPUs' collectives with collect-costs comm",
                                     c.bench.device));
    }
  }
  check_fine_tuning(c);
}

// The model calibration starts from, read before minutes of measuring (so that a bad profile fails at
// once), and the profile whose links the all-to-all is planned on, if any.
struct CalibrationBase {
  ModelFiles files;
  std::shared_ptr<const CostModel> model;
  ModelHardware hardware;
  std::string identity;  // the directory and a digest of its meta: a resume must start from the same
  std::optional<HardwareProfile> links;
};

CalibrationBase load_base(const CalibrateConfig& config) {
  CalibrationBase base;
  base.files = load_model_files(config.base_dir);
  if (!config.hardware.empty()) base.links = load_hardware_profile(config.hardware);
  base.model = load_cost_model(config.base_dir);
  base.hardware = base.model->hardware();
  base.identity = fmt::format("{} ({:016x})", config.base_dir, fnv1a_hash(base.files.meta.dump()));
  return base;
}

// ---- the all-to-alls (with comm_ranks) ----

struct CommCalibration {
  CommCalibrationConfig config;
  CommCalibrationData data;
  CommCalibrationFit fit;
};

CommCalibrationConfig comm_calibration_config(const CalibrateConfig& config, const CalibrationBase& base,
                                              const fs::path& data_dir) {
  CommCalibrationConfig comm;
  comm.world_size = comm_world_size(config);
  // The batch the base's comm net predicts at (a scale-free net's is fixed), not the compute sets' batch:
  // a batch ratio must not pass for a correction.
  const CommModelSpec& spec = base.files.comm_spec;
  comm.batch_size = spec.form == CommForm::kHierarchical ? spec.fabric.batch_size : kScaleFreeCommBatch;
  comm.plans = config.comm_plans;
  comm.holdout_fraction = config.holdout_fraction;
  comm.sampling = config.sampling;
  comm.data_path = (data_dir / kCommCalibrationFile).string();
  comm.settings = {{"sampler", "comm-calibration/1: plans of drawn tasks, each planner in turn"},
                   {"pool", config.pool_path},
                   {"base_model", base.identity},
                   {"seed", config.sampling.seed},
                   {"memory_cap_bytes", config.sampling.memory_cap_bytes},
                   {"world_size", comm.world_size},
                   {"batch_size", comm.batch_size}};
  if (config.job.launched()) comm.settings["gpus_per_host"] = config.job.gpus_per_host;
  return comm;
}

// Times the plans' all-to-alls (first: a few dozen plans in one start of the ranks) and fits the
// correction at once, on the base's comm net as it was trained (it does not depend on the compute part),
// so that too few plans are refused before minutes of compute sets. Nullopt when interrupted.
std::optional<CommCalibration> calibrate_comm(const std::vector<Table>& pool, const CalibrateConfig& config,
                                              const CalibrationBase& base, const fs::path& data_dir,
                                              const CommTimer& comm_timer) {
  if (!comm_timer) throw std::logic_error("calibrate_cost_model: comm_ranks needs a comm timer");
  if (base.files.comm_spec.structure_only) {
    throw SettingError("all-to-all ranks", fmt::format("the all-to-all of {} is a hardware profile's structure, not "
                                                       "a timed net to correct; start from a model whose comm data "
                                                       "was timed",
                                                       config.base_dir));
  }
  CommCalibration comm;
  comm.config = comm_calibration_config(config, base, data_dir);
  comm.data = time_calibration_plans(pool, comm.config, base.model, comm_timer);
  if (comm.data.interrupted) return std::nullopt;
  CommModelSpec raw_spec = base.files.comm_spec;
  raw_spec.correction = CommCorrection{};
  const NeuralCostModel raw("calibrating", base.files.compute_spec, raw_spec);
  comm.fit = fit_comm_calibration(raw, base.files.comm_spec.correction, comm.data);
  if (comm.fit.kept_base) {
    spdlog::warn(
        "calibrate: the all-to-all correction fitted here does not beat the base model on the held-out "
        "plans ({:.1f}% against {:.1f}% per device); the base's comm is kept",
        comm.fit.after.total_mape_percent, comm.fit.before.total_mape_percent);
  }
  return comm;
}

// ---- the compute sets ----

// Measures samples up to config.samples or the time budget, adding them to the writer's directory.
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
    if (!timing.timed_on.empty()) line["timed_on"] = timing.timed_on;
    writer.append(line);
    ++outcome.samples;
    ++outcome.measured_now;
    progress.update(i + 1, fmt::format("{} shards {:.2f} ms ({})", set.shards.size(), timing.median_ms, set.origin));
  }
  progress.finish();
}

// The compute sets in data_dir, resumed and measured up to config.samples or the time budget.
void measure_compute_sets(const std::vector<Table>& pool, const CalibrateConfig& config, const CalibrationBase& base,
                          const ComputeTimer& timer, const fs::path& data_dir,
                          std::chrono::steady_clock::time_point started, CalibrateOutcome& outcome) {
  CostDataWriter writer(data_dir.string(), collection_meta(config, base.identity));
  outcome.samples = writer.existing_samples();
  if (outcome.samples > 0) spdlog::info("{}: resuming after {} measured sets", data_dir.string(), outcome.samples);
  measure_samples(pool, config, base.model, timer, writer, started, outcome);
}

// The held-out part by sample index (stable across resumes), the rest, less its disturbed sets, to tune on.
struct CalibrationSplit {
  std::vector<ComputeSample> held_out, tuning;
};

CalibrationSplit split_samples(const CostData& data, const CalibrateConfig& config) {
  CalibrationSplit split;
  for (std::size_t i = 0; i < data.compute.size(); ++i) {
    (is_held_out(config.sampling.seed, static_cast<int64_t>(i), config.holdout_fraction) ? split.held_out
                                                                                         : split.tuning)
        .push_back(data.compute[i]);
  }
  drop_disturbed(split.tuning, 0.3);
  if (static_cast<int64_t>(split.tuning.size()) < kMinTrainSamples ||
      static_cast<int64_t>(split.held_out.size()) < kMinHeldOutSamples) {
    throw InputError(
        fmt::format("calibrate: {} sets to fine-tune on and {} held out are too few (need {} and {}); "
                    "allow more samples or minutes and re-run to resume",
                    split.tuning.size(), split.held_out.size(), kMinTrainSamples, kMinHeldOutSamples));
  }
  return split;
}

// ---- fine-tuning ----

// What a calibrated model predicts: each set's median timed step. Pretraining learns the fastest (its
// undisturbed latency); a model of this machine should predict the steps a job here takes, as
// shardplan.measure reports them (medians).
constexpr LatencyStatistic kCalibrationLatency = typical_latency_ms;
constexpr const char* kCalibrationLatencyText = "median of each set's timed steps";

nlohmann::json metrics_on(const NeuralCostModel& model, const std::vector<ComputeSample>& samples) {
  std::vector<std::vector<ShardFeatures>> sets;
  std::vector<double> measured;
  for (const auto& s : samples) {
    sets.push_back(s.shards);
    measured.push_back(kCalibrationLatency(s));
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

// The machine's overall speed: the median log ratio of measured to predicted over the tuning sets. Not the
// mean: a disturbed set (another process, a page-out) only ever measures slower, and a few of them pulled
// the mean's scale 8% past the held-out sets' median on this VM (docs/calibration.md).
double speed_offset(const NeuralCostModel& before, const std::vector<ComputeSample>& tuning, const ComputeSet& set) {
  std::vector<std::vector<ShardFeatures>> sets;
  for (const auto& s : tuning) sets.push_back(s.shards);
  std::vector<double> predicted = before.predict_compute(sets);
  std::vector<double> log_ratios;
  for (std::size_t i = 0; i < predicted.size(); ++i)
    log_ratios.push_back(std::log(set.latency_ms[i] / std::max(1e-6, predicted[i])));
  return median(log_ratios);
}

// Every weight fine-tuned from `net`, keeping the base normalisation, stopping on a validation part. The
// loss is the absolute log error, MAPE's own measure and, like the median, not pulled by the few sets a
// disturbance slowed: with the squared error, fine-tuning undid the median's scale here.
TrainOutcome tune_weights(ComputeNet& net, const ComputeSet& set, const Normaliser& norm, const CalibrateConfig& config,
                          std::chrono::steady_clock::time_point started) {
  Split split = split_indices(set.latency_ms.size(), kValidationFraction, 0.0, config.sampling.seed, kValidationStream);
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
  return train(
      net, split.train.size(),
      [&](const std::vector<std::size_t>& batch) {
        ComputeBatch b = compute_batch(set, pick(split.train, batch), norm);
        return torch::l1_loss(net->forward(b.x, b.device, b.devices), b.target);
      },
      validation_loss, settings, "fine-tuning", kShuffleStream, start_loss);
}

// What fine-tuning did: the error on the held-out sets before, after the scale alone and after tuning.
struct Tuning {
  double offset = 0.0;
  std::size_t tuning_sets = 0;
  nlohmann::json before, after_offset, after;
  bool base_was_better = false;
  TrainOutcome outcome;
};

// Fine-tunes base.files.compute (in place) on the tuning sets: 1. the machine's speed, 2. every weight.
Tuning fine_tune(CalibrationBase& base, const CalibrationSplit& samples, const CalibrateConfig& config,
                 std::chrono::steady_clock::time_point started) {
  at::set_num_threads(config.threads);
  torch::manual_seed(config.sampling.seed);
  ModelFiles& files = base.files;
  Tuning t;
  NeuralCostModel before_model = model_of(files.compute, files);
  t.before = metrics_on(before_model, samples.held_out);
  ComputeSet set = compute_set(samples.tuning, kCalibrationLatency);
  t.tuning_sets = set.latency_ms.size();
  t.offset = speed_offset(before_model, samples.tuning, set);
  ComputeNet& net = files.compute;
  shift_log_latency(net, t.offset);
  t.after_offset = metrics_on(model_of(net, files), samples.held_out);
  t.outcome = tune_weights(net, set, files.compute_spec.features, config, started);
  t.after = metrics_on(model_of(net, files), samples.held_out);
  // A base model measured on this very machine may already fit it better than a fine-tuning on a few
  // hundred noisy sets: the user must hear it rather than find a worse model under a new name.
  t.base_was_better = t.after["mape_percent"].get<double>() > t.before["mape_percent"].get<double>();
  if (t.base_was_better) {
    spdlog::warn(
        "calibrate: the base model {} fits this machine's held-out sets better ({:.1f}% MAPE) than the "
        "calibrated one ({:.1f}%); keep planning with the base, or calibrate again with more samples",
        config.base_dir, t.before["mape_percent"].get<double>(), t.after["mape_percent"].get<double>());
  }
  return t;
}

// ---- the new model directory ----

// The job's world and host layout, and with `ranks` who measured: what a model of the cluster was made on.
nlohmann::json job_section(const CalibrationJobLayout& job, bool ranks) {
  nlohmann::json j = {{"launcher", "torchrun"},
                      {"world_size", job.world_size},
                      {"gpus_per_host", job.gpus_per_host},
                      {"hosts", job.hosts()},
                      {"backend", job.backend}};
  if (ranks) {
    j["ranks"] = job.ranks;
    j["compute_sets"] = "set k of a run is timed by rank k mod world_size, one rank at a time";
  }
  return j;
}

// The base's comm part in `meta`: on the profile's links, or the base's at the bench's batch, corrected by
// this host's timings with comm_ranks. Fills the comm hardware and returns how the comm part was made.
std::string calibrated_comm(nlohmann::json& meta, nlohmann::json& comm_hardware, const CalibrateConfig& config,
                            const CalibrationBase& base, const std::optional<CommCalibration>& comm,
                            const nlohmann::json& source_meta) {
  comm_hardware = hardware_to_json(base.hardware).value("comm", nlohmann::ordered_json::object());
  comm_hardware["from_model"] = config.base_dir;
  if (base.links) {
    plan_comm_on_profile(meta["comm"], comm_hardware, *base.links, config.bench.batch_size, config.base_dir);
  } else {
    match_comm_batch(meta["comm"], config.bench.batch_size, config.base_dir);
  }
  if (!comm) {
    return base.links ? fmt::format(
                            "the hierarchical estimate on profile {}'s links at batch {}, not measured: "
                            "compute-only calibration cannot time all-to-alls",
                            base.links->name, config.bench.batch_size)
                      : fmt::format("kept from the base model {}: compute-only calibration cannot time all-to-alls",
                                    config.base_dir);
  }
  if (config.job.launched()) comm_hardware["timed_on"] = job_section(config.job, false);
  if (!comm->fit.kept_base) {
    meta["comm"]["correction"] = comm_correction_to_json(comm->fit.correction);
    comm_hardware["corrected_on"] = fmt::format("{} ({})", comm_ranks_text(config, source_meta.value("host", "")),
                                                source_meta.value("device_model", ""));
  }
  const std::size_t plans = comm->data.tuning.size() + comm->data.held_out.size();
  const std::string ranks = comm_ranks_text(config, "this host");
  return comm->fit.kept_base
             ? fmt::format(
                   "the base model {}'s net, kept: a correction fitted to {} plans timed on {} "
                   "did no better on the held-out ones",
                   config.base_dir, plans, ranks)
             : fmt::format("the base model {}'s net, corrected by {} plans timed on {}", config.base_dir, plans, ranks);
}

nlohmann::json calibration_section(const CalibrateConfig& config, const CalibrationBase& base,
                                   const std::string& data_dir, const CalibrationSplit& samples, std::size_t measured,
                                   const Tuning& t, const std::string& comm_text, double seconds) {
  return {{"base_model", base.identity},
          {"base_hardware", describe_hardware(base.hardware)},
          {"data", data_dir},
          {"samples", measured},
          {"tuning_samples", t.tuning_sets},
          {"held_out_samples", samples.held_out.size()},
          {"holdout_fraction", config.holdout_fraction},
          {"before", t.before},
          {"after_scale_only", t.after_offset},
          {"after", t.after},
          {"base_was_better", t.base_was_better},
          {"scale", std::exp(t.offset)},
          {"epochs", t.outcome.epochs_run},
          {"best_epoch", t.outcome.best_epoch},
          {"stopped_by_time", t.outcome.stopped_by_time},
          {"learning_rate", config.learning_rate},
          {"comm", comm_text},
          {"seconds", std::round(seconds)},
          {"command", config.command_line}};
}

nlohmann::json comm_fit_section(const CalibrateConfig& config, const CommCalibration& comm) {
  nlohmann::json fit = comm.fit.to_json();
  fit["world_size"] = comm_world_size(config);
  if (config.job.launched()) fit["gpus_per_host"] = config.job.gpus_per_host;
  fit["batch_size"] = comm.config.batch_size;
  fit["tuning_plans"] = comm.data.tuning.size();
  fit["held_out_plans"] = comm.data.held_out.size();
  fit["data"] = comm.config.data_path;
  return fit;
}

// The new model's meta: the base's, with this machine's compute and how its comm part was made.
nlohmann::json calibrated_meta(const CalibrateConfig& config, const CalibrationBase& base, const CostData& data,
                               const std::string& data_dir, const CalibrationSplit& samples, const Tuning& t,
                               const std::optional<CommCalibration>& comm, double seconds) {
  const nlohmann::json& source_meta = data.meta;
  nlohmann::json meta = base.files.meta;
  meta["name"] = fs::path(config.out_dir).filename().string();
  meta["compute"]["step_cost_ms"] = base.files.compute->step_cost_ms();
  nlohmann::json comm_hardware;
  const std::string comm_text = calibrated_comm(meta, comm_hardware, config, base, comm, source_meta);
  meta["hardware"] = {{"compute",
                       {{"device", source_meta.value("device", "")},
                        {"device_model", source_meta.value("device_model", "")},
                        {"kernel", source_meta.value("kernel", config.bench.kernel)},
                        {"host", source_meta.value("host", "")},
                        {"date", source_meta.value("date", "")},
                        {"batch_size", config.bench.batch_size}}},
                      {"comm", comm_hardware},
                      {"calibrated_on", utc_now()}};
  meta["calibration"] =
      calibration_section(config, base, data_dir, samples, data.compute.size(), t, comm_text, seconds);
  meta["metrics"]["compute"] = t.after;
  meta["metrics"]["compute_note"] = "on the calibration's held-out sets";
  meta["calibration"]["latency"] = kCalibrationLatencyText;
  if (comm) meta["calibration"]["comm_fit"] = comm_fit_section(config, *comm);
  if (config.job.launched()) meta["calibration"]["job"] = job_section(config.job, true);
  return meta;
}

void log_calibration(const CalibrateConfig& config, std::size_t sets, double seconds, const Tuning& t,
                     const std::optional<CommCalibration>& comm) {
  spdlog::info(
      "calibrated {} on {} sets in {:.0f} s: held-out MAPE {:.1f}% -> {:.1f}% (scale alone {:.1f}%), Spearman "
      "{:.3f} -> {:.3f}",
      config.out_dir, sets, seconds, t.before["mape_percent"].get<double>(), t.after["mape_percent"].get<double>(),
      t.after_offset["mape_percent"].get<double>(), t.before["spearman"].get<double>(),
      t.after["spearman"].get<double>());
  if (comm) {
    spdlog::info("all-to-all on {} held-out plans: per-device MAPE of forward plus backward {:.1f}% -> {:.1f}%{}",
                 comm->data.held_out.size(), comm->fit.before.total_mape_percent, comm->fit.after.total_mape_percent,
                 comm->fit.kept_base ? " (not kept)" : "");
  }
}

}  // namespace

CalibrateOutcome calibrate_cost_model(const std::vector<Table>& pool, const CalibrateConfig& config,
                                      const ComputeTimer& timer_or_default, const CommTimer& comm_timer) {
  check_config(config);
  const auto started = std::chrono::steady_clock::now();
  CalibrationBase base = load_base(config);
  const ComputeTimer timer = timer_or_default ? timer_or_default : compute_timer(config.bench);
  prepare_memory_for_timing();  // before the metadata records the policy
  const fs::path data_dir =
      config.sets_dir.empty() ? fs::path(config.out_dir) / kCalibrationDataDir : fs::path(config.sets_dir);
  CalibrateOutcome outcome;
  std::optional<CommCalibration> comm;
  if (config.job.launched() && comm_world_size(config) > 0 && base.files.comm_spec.structure_only) {
    spdlog::warn(
        "calibrate: the all-to-all of {} is a hardware profile's structure, not a timed net to correct: the job "
        "times compute only (to time this cluster's all-to-alls, collect-costs comm and pretrain a comm net: "
        "docs/cluster-model.md)",
        config.base_dir);
  } else if (comm_world_size(config) > 0) {
    comm = calibrate_comm(pool, config, base, data_dir, comm_timer);
    if (!comm) {
      outcome.interrupted = true;
      outcome.comm_untimed = true;
      return outcome;
    }
  }
  if (config.sets_dir.empty()) measure_compute_sets(pool, config, base, timer, data_dir, started, outcome);
  if (outcome.interrupted) return outcome;
  if (outcome.out_of_time) {
    spdlog::warn(
        "calibrate: measured {} of {} sets in the time budget of {:g} minutes; fine-tuning on those (re-run "
        "to add more)",
        outcome.samples, config.samples, config.minutes);
  }
  CostData data = load_cost_data(data_dir.string(), CostKind::kCompute);
  if (!config.sets_dir.empty()) outcome.samples = static_cast<int64_t>(data.compute.size());
  const CalibrationSplit samples = split_samples(data, config);
  const Tuning tuning = fine_tune(base, samples, config, started);
  const double seconds = elapsed_seconds(started);
  nlohmann::json meta = calibrated_meta(config, base, data, data_dir.string(), samples, tuning, comm, seconds);
  save_model_directory(config.out_dir, meta, base.files.compute, base.files.comm);
  outcome.meta = meta;
  log_calibration(config, data.compute.size(), seconds, tuning, comm);
  return outcome;
}

}  // namespace shardplan
