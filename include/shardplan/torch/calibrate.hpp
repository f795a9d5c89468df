#pragma once
// `shard-plan calibrate`: adapts a pre-trained cost model to this machine in minutes. It measures a few
// hundred plan-like shard sets here (calibration_sampler.hpp), fine-tunes the base model's compute part on
// most of them, and reports the error before and after on the rest. The communication part is kept from
// the base model (a single device cannot time all-to-alls), and the new model's meta says so; with
// comm_ranks, the all-to-alls of plan-like layouts are also timed on that many ranks of this host and
// the comm part gets a correction fitted to them (comm_calibration.hpp).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/costs/calibration_sampler.hpp"
#include "shardplan/costs/comm_calibration.hpp"
#include "shardplan/costs/measure.hpp"

namespace shardplan {

// The measured samples live in this subdirectory of the model directory (cost-data format, so
// eval-cost-model and pretrain-cost-model read them too).
inline constexpr const char* kCalibrationDataDir = "calibration";

// A calibration launched as a job (torchrun): every rank times compute sets on its own device, the ranks
// together time the all-to-alls, rank 0 fits and writes (calibration_job.hpp).
struct CalibrationJobLayout {
  int world_size = 0;  // 0: not a job
  int gpus_per_host = 0;
  std::string backend;   // the all-to-alls' collector: gloo or nccl
  nlohmann::json ranks;  // per rank: host, device and its model, as each reported itself
  bool launched() const { return world_size > 0; }
  int hosts() const { return gpus_per_host > 0 ? (world_size + gpus_per_host - 1) / gpus_per_host : 1; }
};

struct CalibrateConfig {
  std::string out_dir;            // the model directory to write
  std::string base_dir;           // the model to start from
  std::string pool_path;          // the table pool, recorded in the metadata
  int64_t samples = 300;          // shard sets to measure (resumes up to it)
  double minutes = 5.0;           // the whole run, measuring and fine-tuning; measuring stops in time to tune
  double holdout_fraction = 0.2;  // samples kept out of the fine-tuning to measure its error
  CalibrationSampling sampling;
  ComputeBenchConfig bench;  // how a set is timed (device, batch, iterations)
  // A hardware profile (name or file): the all-to-all becomes its links' structure alone, at bench's batch
  // (a GPU's calibration from the CPU-measured bundled model). Empty: the base's comm part is kept.
  std::string hardware;
  // Compute sets timed elsewhere (a cost-data directory: per-rank compute timed on TorchRec, say): fine-tune
  // on them instead of measuring any here. Empty: measure sets into out_dir/calibration.
  std::string sets_dir;
  // Ranks of this host to time all-to-alls on (0: none, the base's comm is kept) and the plans to time.
  int comm_ranks = 0;
  int64_t comm_plans = 40;
  // Set when the ranks of a launched job measure: the all-to-alls are then the job's, on its world size.
  CalibrationJobLayout job;
  // Fine-tuning: Adam on the MSE of log latency, from the base weights, early stopping on a validation part.
  int epochs = 300;
  int patience = 30;
  double learning_rate = 3e-4;
  int batch_size = 32;
  int threads = 1;
  bool quiet = false;
  std::string command_line;
};

struct CalibrateOutcome {
  int64_t samples = 0;        // measured samples in the directory
  int64_t measured_now = 0;   // of which this run measured
  bool interrupted = false;   // Ctrl-C: samples kept, no model written; re-run to resume
  bool comm_untimed = false;  // with interrupted: it stopped while timing the all-to-alls, before any compute set
  bool out_of_time = false;   // measuring stopped at the time budget (minutes) before all samples
  nlohmann::json meta;        // the written model's meta.json (null when none was written)
};

// Throws SettingError naming a setting out of its range, InputError for an unreadable base model or too few
// samples to fine-tune.
// `timer` times the shard sets; without one, the compute benchmark does with config.bench (compute_timer).
// `comm_timer` times the all-to-alls when config.comm_ranks is set (the CLI spawns the ranks); it is required then.
CalibrateOutcome calibrate_cost_model(const std::vector<Table>& pool, const CalibrateConfig& config,
                                      const ComputeTimer& timer = {}, const CommTimer& comm_timer = {});

}  // namespace shardplan
