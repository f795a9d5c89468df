// shard-plan calibrate: the library against a synthetic machine whose truth is known (the bundled model's
// own prediction, scaled and skewed by width), and the command end to end on real kernels at tiny sizes:
// interrupt, resume, provenance.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "../comm/process.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/torch/calibrate.hpp"
#include "shardplan/torch/model_files.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;
using commtest::Process;
using commtest::read_lines;
using commtest::TempDir;
using namespace std::chrono_literals;

const fs::path kSource = SHARDPLAN_SOURCE_DIR;

std::string bundled_model() { return (kSource / "models" / "cpu-2core").string(); }
std::vector<Table> pool() { return load_tables((kSource / "data" / "pool.json").string()); }

// Twice as slow as the bundled model says, and wide shards slower again: a scale alone cannot fit it.
struct SyntheticMachine {
  std::shared_ptr<const CostModel> base = load_cost_model(bundled_model());
  int calls = 0;
  ComputeTiming operator()(const std::vector<Table>& shards, uint64_t /*seed*/) {
    ++calls;
    std::vector<ShardFeatures> set;
    double wide = 0.0;
    for (const auto& s : shards) {
      set.push_back(shard_features(s, s.dim));
      if (s.dim >= 64) wide += 1.0;
    }
    double ms = 2.0 * base->predict_compute({set}).front() * (1.0 + 0.8 * wide / static_cast<double>(shards.size()));
    return ComputeTiming{ms, {ms, ms * 1.01}, {}};
  }
  // Times sets on this machine, which must outlive the timer.
  ComputeTimer timer() {
    return [this](const std::vector<Table>& s, uint64_t seed) { return (*this)(s, seed); };
  }
};

// A machine exactly as `base` predicts it.
ComputeTimer timed_as_predicted(std::shared_ptr<const CostModel> base) {
  return [base](const std::vector<Table>& shards, uint64_t /*seed*/) {
    std::vector<ShardFeatures> set;
    for (const auto& s : shards) set.push_back(shard_features(s, s.dim));
    const double ms = base->predict_compute({set}).front();
    return ComputeTiming{ms, {ms, ms}, {}};
  };
}

// A host whose all-to-all transfers take 0.3 ms + 0.6 x what the bundled model (`base`) says forward
// and 0.2 ms + 0.7 x backward, the forward waiting as the model's does; counts its calls and the plans
// it timed. `timer` refers to the host: it stays where it was made.
struct FakeCommHost {
  std::shared_ptr<const CostModel> base = load_cost_model(bundled_model());
  int calls = 0;
  std::size_t plans_timed = 0;
  CommTimer timer = [this](const std::vector<CommToMeasure>& plans, int64_t batch_size) {
    return time(plans, batch_size);
  };

  FakeCommHost() = default;
  FakeCommHost(const FakeCommHost&) = delete;
  FakeCommHost& operator=(const FakeCommHost&) = delete;

  std::vector<std::optional<MeasuredComm>> time(const std::vector<CommToMeasure>& plans, int64_t batch_size) {
    ++calls;
    plans_timed += plans.size();
    EXPECT_EQ(batch_size, 2048);  // the bundled comm data's batch
    std::vector<std::optional<MeasuredComm>> out;
    for (const CommToMeasure& p : plans) {
      EXPECT_EQ(p.dim_sums.size(), 4u);
      std::vector<double> fw, bw;
      base->predict_comm(p.dim_sums, p.compute_ms, fw, bw);
      const double latest = *std::max_element(p.compute_ms.begin(), p.compute_ms.end());
      MeasuredComm m;
      for (std::size_t r = 0; r < fw.size(); ++r) {
        const double wait = latest - p.compute_ms[r];
        m.fw_ms.push_back(wait + 0.3 + 0.6 * (fw[r] - wait));
        m.bw_ms.push_back(0.2 + 0.7 * bw[r]);
      }
      out.push_back(std::move(m));
    }
    return out;
  }
};

CalibrateConfig quick_config(const std::string& out, int64_t samples) {
  CalibrateConfig c;
  c.out_dir = out;
  c.base_dir = bundled_model();
  c.pool_path = "data/pool.json";
  c.samples = samples;
  c.minutes = 5;
  c.sampling.memory_cap_bytes = 256ll << 20;
  c.epochs = 150;
  c.learning_rate = 1e-3;
  c.quiet = true;
  return c;
}

// The meta of a quick calibration (60 sets) on a machine 1.5 times as slow as the bundled model says;
// `timing` turns a set's true milliseconds into what its timer reports.
nlohmann::json calibrated_on_slower_machine(const TempDir& dir, const std::function<ComputeTiming(double)>& timing) {
  std::shared_ptr<const CostModel> base = load_cost_model(bundled_model());
  ComputeTimer timer = [&](const std::vector<Table>& shards, uint64_t /*seed*/) {
    std::vector<ShardFeatures> set;
    for (const auto& s : shards) set.push_back(shard_features(s, s.dim));
    return timing(1.5 * base->predict_compute({set}).front());
  };
  CalibrateConfig config = quick_config(dir.path("calibrated"), 60);
  config.epochs = 3;
  calibrate_cost_model(pool(), config, timer);
  return read_json_file(dir.path("calibrated") + "/meta.json");
}

// Every sixth set is disturbed (three times slower, as another process or a page-out makes it): the scale
// is the machine's, not pulled up by the disturbed sets as a mean would be (1.5 x 3^(1/6) = 1.8).
TEST(Calibrate, DisturbedSetsDoNotPullTheScale) {
  TempDir dir;
  int calls = 0;
  const auto meta = calibrated_on_slower_machine(dir, [&](double ms) {
    ms *= ++calls % 6 == 0 ? 3.0 : 1.0;
    return ComputeTiming{ms, {ms, ms}, {}};
  });
  EXPECT_NEAR(meta["calibration"]["scale"].get<double>(), 1.5, 0.01);
}

// A model of this machine predicts the steps a job here takes: each set's median step, not its fastest.
// Where one step in three runs 20% faster than the rest, the scale is 1.5, not 1.2.
TEST(Calibrate, TheModelPredictsASetsMedianStepNotItsFastest) {
  TempDir dir;
  const auto meta = calibrated_on_slower_machine(dir, [](double ms) {
    return ComputeTiming{ms, {0.8 * ms, ms, ms}, {}};
  });
  EXPECT_NEAR(meta["calibration"]["scale"].get<double>(), 1.5, 0.01);
  EXPECT_EQ(meta["calibration"]["latency"], "median of each set's timed steps");
  EXPECT_LT(meta["calibration"]["after_scale_only"]["mape_percent"].get<double>(), 1.0);
}

// A GPU's calibration times sets at batch 65536; the bundled model's all-to-alls were timed at 2048 on a
// CPU. With --hardware the model plans its all-to-all on the profile's links at the GPU's batch; without,
// it keeps the base's (and warns).
TEST(Calibrate, AProfilePlansTheAllToAllOnItsLinksAtTheCalibrationsBatch) {
  TempDir dir;
  std::shared_ptr<const CostModel> base = load_cost_model(bundled_model());
  ComputeTimer timer = timed_as_predicted(base);
  CalibrateConfig config = quick_config(dir.path("gpu"), 40);
  config.epochs = 2;
  config.bench.batch_size = 65536;
  config.hardware = "h100-sxm-ib400";
  calibrate_cost_model(pool(), config, timer);
  const auto meta = read_json_file(dir.path("gpu") + "/meta.json");
  EXPECT_EQ(meta["comm"]["structure_only"], true);
  EXPECT_EQ(meta["comm"]["fabric"]["name"], "h100-sxm-ib400");
  EXPECT_EQ(meta["comm"]["fabric"]["batch_size"], 65536);
  EXPECT_EQ(meta["hardware"]["comm"]["profile"], "h100-sxm-ib400");
  EXPECT_NE(meta["calibration"]["comm"].get<std::string>().find("not measured"), std::string::npos);
  auto calibrated = load_cost_model(dir.path("gpu"));
  EXPECT_TRUE(calibrated->comm_structure_only());

  CalibrateConfig kept = config;
  kept.out_dir = dir.path("kept");
  kept.hardware.clear();
  calibrate_cost_model(pool(), kept, timer);
  const auto kept_meta = read_json_file(dir.path("kept") + "/meta.json");
  EXPECT_FALSE(kept_meta["comm"].contains("structure_only"));
  EXPECT_EQ(kept_meta["comm"]["fabric"]["batch_size"],
            read_json_file(bundled_model() + "/meta.json")["comm"]["fabric"]["batch_size"]);

  CalibrateConfig wrong = config;
  wrong.out_dir = dir.path("wrong");
  wrong.hardware = "no-such-profile";
  EXPECT_THROW(calibrate_cost_model(pool(), wrong, timer), InputError);
  EXPECT_FALSE(fs::exists(dir.path("wrong") + "/calibration"));  // refused before measuring anything
}

TEST(Calibrate, FineTuningCutsTheHeldOutErrorOnASyntheticMachine) {
  TempDir dir;
  SyntheticMachine machine;
  std::vector<Table> tables = pool();
  CalibrateConfig config = quick_config(dir.path("calibrated"), 150);
  ComputeTimer timer = machine.timer();
  CalibrateOutcome outcome = calibrate_cost_model(tables, config, timer);
  EXPECT_EQ(outcome.samples, 150);
  EXPECT_EQ(outcome.measured_now, 150);
  EXPECT_EQ(machine.calls, 150);
  const auto& c = outcome.meta["calibration"];
  const double before = c["before"]["mape_percent"], after = c["after"]["mape_percent"];
  EXPECT_GT(before, 50.0);
  EXPECT_LT(after, before / 3) << "before " << before << "%, after " << after << "%";
  EXPECT_LT(after, 15.0);
  // Early stopping on the validation part keeps fine-tuning from doing worse than the scale alone there;
  // on a few dozen held-out sets the two may still differ by noise (11.7% against 11.5% once the
  // calibration sets came from plans that split tables of 4 (mod 8) columns).
  EXPECT_LE(after, 1.05 * c["after_scale_only"]["mape_percent"].get<double>());
  EXPECT_FALSE(c["base_was_better"].get<bool>());
  EXPECT_GT(c["scale"].get<double>(), 1.8);
  EXPECT_GT(c["held_out_samples"].get<int>(), 15);

  // The directory is a model the planner loads; its meta names this machine and keeps the base's comm.
  auto calibrated = load_cost_model(config.out_dir);
  auto base = load_cost_model(bundled_model());
  ModelHardware hardware = calibrated->hardware();
  EXPECT_EQ(hardware.compute_device, "cpu");
  EXPECT_EQ(hardware.compute_device_model, cpu_model());
  EXPECT_FALSE(hardware.calibrated_on.empty());
  EXPECT_EQ(hardware.comm_world_sizes, base->hardware().comm_world_sizes);
  EXPECT_NE(c["comm"].get<std::string>().find("kept from the base model"), std::string::npos);
  std::vector<double> fw_a, bw_a, fw_b, bw_b;
  calibrated->predict_comm({64, 128, 32}, {1.0, 2.0, 0.5}, fw_a, bw_a);
  base->predict_comm({64, 128, 32}, {1.0, 2.0, 0.5}, fw_b, bw_b);
  EXPECT_EQ(fw_a, fw_b);
  EXPECT_EQ(bw_a, bw_b);
  EXPECT_TRUE(fs::exists(fs::path(config.out_dir) / kCalibrationDataDir / "samples.jsonl"));

  // Resuming adds only what is missing.
  config.samples = 160;
  CalibrateOutcome more = calibrate_cost_model(tables, config, timer);
  EXPECT_EQ(more.measured_now, 10);
  EXPECT_EQ(more.samples, 160);
}

// Sets timed elsewhere (--sets: TorchRec's per-rank compute, say) are fine-tuned on as measured ones are,
// and nothing is measured here.
TEST(Calibrate, SetsTimedElsewhereAreTunedOnWithoutMeasuring) {
  TempDir dir;
  SyntheticMachine machine;
  std::vector<Table> tables = pool();
  CalibrateConfig measuring = quick_config(dir.path("measured"), 150);
  ComputeTimer timer = machine.timer();
  const CalibrateOutcome measured = calibrate_cost_model(tables, measuring, timer);

  CalibrateConfig config = quick_config(dir.path("from-sets"), 150);
  config.sets_dir = (fs::path(measuring.out_dir) / kCalibrationDataDir).string();
  int calls = 0;
  ComputeTimer never = [&calls](const std::vector<Table>&, uint64_t) {
    ++calls;
    return ComputeTiming{1.0, {1.0}, {}};
  };
  const CalibrateOutcome outcome = calibrate_cost_model(tables, config, never);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(outcome.samples, 150);
  EXPECT_EQ(outcome.measured_now, 0);
  const auto& c = outcome.meta["calibration"];
  EXPECT_EQ(c["data"].get<std::string>(), config.sets_dir);
  EXPECT_LT(c["after"]["mape_percent"].get<double>(), c["before"]["mape_percent"].get<double>() / 3);
  // The same sets, held out by index and tuned with the same seed: the measuring run's model.
  EXPECT_NEAR(c["after"]["mape_percent"].get<double>(),
              measured.meta["calibration"]["after"]["mape_percent"].get<double>(), 1e-6);
  EXPECT_FALSE(fs::exists(fs::path(config.out_dir) / kCalibrationDataDir));
  EXPECT_NO_THROW(load_cost_model(config.out_dir));

  CalibrateConfig empty = quick_config(dir.path("from-nothing"), 150);
  empty.sets_dir = dir.path("no-sets");
  fs::create_directories(empty.sets_dir);
  EXPECT_THROW(calibrate_cost_model(tables, empty, never), InputError);
  config.comm_ranks = 4;
  EXPECT_THROW(calibrate_cost_model(tables, config, never), SettingError);
}

// A calibration launched as a job: its all-to-alls are timed on the job's world (4 ranks, 2 hosts of 2), and
// the model names the world, the host layout and who measured; planning on another layout warns.
TEST(Calibrate, AJobTimesItsOwnWorldAndNamesItsLayout) {
  TempDir dir;
  FakeCommHost host;
  CalibrateConfig config = quick_config(dir.path("job"), 30);
  config.epochs = 2;
  config.comm_plans = 8;
  config.job.world_size = 4;
  config.job.gpus_per_host = 2;
  config.job.backend = "gloo";
  config.job.ranks = nlohmann::json::array({{{"rank", 0}, {"host", "a"}},
                                            {{"rank", 1}, {"host", "a"}},
                                            {{"rank", 2}, {"host", "b"}},
                                            {{"rank", 3}, {"host", "b"}}});
  CalibrateOutcome outcome = calibrate_cost_model(pool(), config, timed_as_predicted(host.base), host.timer);
  EXPECT_EQ(host.calls, 1);
  const auto& meta = outcome.meta;
  const auto& job = meta["calibration"]["job"];
  EXPECT_EQ(job["world_size"], 4);
  EXPECT_EQ(job["gpus_per_host"], 2);
  EXPECT_EQ(job["hosts"], 2);
  EXPECT_EQ(job["ranks"].size(), 4u);
  EXPECT_EQ(meta["calibration"]["comm_fit"]["world_size"], 4);
  EXPECT_EQ(meta["hardware"]["comm"]["timed_on"]["gpus_per_host"], 2);
  EXPECT_NE(meta["calibration"]["comm"].get<std::string>().find("4 ranks, 2 per host on 2 hosts (gloo)"),
            std::string::npos)
      << meta["calibration"]["comm"];
  const ModelHardware hardware = load_cost_model(config.out_dir)->hardware();
  EXPECT_EQ(hardware.comm_gpus_per_host, 2);
  EXPECT_TRUE(host_layout_warning(hardware, 2).empty());
  EXPECT_NE(host_layout_warning(hardware, 8).find("timed with 2 GPUs per host and this plan has 8"), std::string::npos);

  // What a job cannot take: ranks of this host, sets timed elsewhere, a profile's links, a layout that
  // does not divide the world.
  auto refused = [&](const std::function<void(CalibrateConfig&)>& change) {
    CalibrateConfig bad = config;
    bad.out_dir = dir.path("refused");
    change(bad);
    EXPECT_THROW(calibrate_cost_model(pool(), bad, timed_as_predicted(host.base), host.timer), SettingError);
    EXPECT_FALSE(fs::exists(bad.out_dir));
  };
  refused([](CalibrateConfig& c) { c.comm_ranks = 4; });
  refused([&](CalibrateConfig& c) { c.sets_dir = dir.path("sets"); });
  refused([](CalibrateConfig& c) { c.hardware = "h100-sxm-ib400"; });
  refused([](CalibrateConfig& c) { c.job.gpus_per_host = 3; });
  refused([](CalibrateConfig& c) { c.comm_plans = 4; });
}

// A host whose all-to-all transfers take 0.3 ms + 0.6 x what the bundled model says forward, and
// 0.2 ms + 0.7 x backward: --comm-ranks recovers that, the model directory carries it, and a resumed
// calibration times no plan twice.
TEST(Calibrate, AllToAllsTimedHereCorrectTheCommModelAndResume) {
  TempDir dir;
  FakeCommHost host;
  std::shared_ptr<const CostModel> base = host.base;
  ComputeTimer compute_timer = timed_as_predicted(base);
  CommTimer comm_timer = host.timer;
  CalibrateConfig config = quick_config(dir.path("host"), 30);
  config.epochs = 2;
  config.comm_ranks = 4;
  config.comm_plans = 16;
  CalibrateOutcome outcome = calibrate_cost_model(pool(), config, compute_timer, comm_timer);
  EXPECT_EQ(host.calls, 1);
  EXPECT_EQ(host.plans_timed, 16u);
  const auto& meta = outcome.meta;
  const auto& correction = meta["comm"]["correction"];
  EXPECT_NEAR(correction["fw_offset_ms"].get<double>(), 0.3, 1e-6);
  EXPECT_NEAR(correction["fw_scale"].get<double>(), 0.6, 1e-6);
  EXPECT_NEAR(correction["bw_offset_ms"].get<double>(), 0.2, 1e-6);
  EXPECT_NEAR(correction["bw_scale"].get<double>(), 0.7, 1e-6);
  const auto& fit = meta["calibration"]["comm_fit"];
  EXPECT_FALSE(fit["kept_base"].get<bool>());
  EXPECT_GT(fit["before"]["total_mape_percent"].get<double>(), 10.0);
  EXPECT_LT(fit["after"]["total_mape_percent"].get<double>(), 1e-3);
  EXPECT_EQ(fit["tuning_plans"].get<int>() + fit["held_out_plans"].get<int>(), 16);
  EXPECT_NE(meta["calibration"]["comm"].get<std::string>().find("corrected by 16 plans timed on 4 ranks of this host"),
            std::string::npos)
      << meta["calibration"]["comm"];
  EXPECT_FALSE(meta["hardware"]["comm"]["corrected_on"].get<std::string>().empty());

  // The planner's model predicts the host's all-to-all.
  auto calibrated = load_cost_model(config.out_dir);
  EXPECT_NE(describe_hardware(calibrated->hardware()).find(", corrected on 4 ranks of "), std::string::npos)
      << describe_hardware(calibrated->hardware());
  // A copy without its correction no longer claims one.
  nlohmann::json uncorrected = meta;
  uncorrected["comm"].erase("correction");
  EXPECT_TRUE(hardware_from_model_meta(uncorrected).comm_corrected_on.empty());
  const std::vector<int64_t> widths = {64, 128, 32, 200};
  const std::vector<double> compute = {1.0, 2.0, 0.5, 1.5};
  std::vector<double> fw, bw, cfw, cbw;
  base->predict_comm(widths, compute, fw, bw);
  calibrated->predict_comm(widths, compute, cfw, cbw);
  for (std::size_t r = 0; r < widths.size(); ++r) {
    const double wait = 2.0 - compute[r];
    EXPECT_NEAR(cfw[r], wait + 0.3 + 0.6 * (fw[r] - wait), 1e-6);
    EXPECT_NEAR(cbw[r], 0.2 + 0.7 * bw[r], 1e-6);
  }

  // Resuming with more compute sets times no all-to-all again; other ranks are another collection.
  config.samples = 34;
  calibrate_cost_model(pool(), config, compute_timer, comm_timer);
  EXPECT_EQ(host.calls, 1);
  CalibrateConfig other = config;
  other.comm_ranks = 2;
  EXPECT_THROW(calibrate_cost_model(pool(), other, compute_timer, comm_timer), InputError);

  // Refused before anything is measured: with --hardware, and without a timer.
  CalibrateConfig both = config;
  both.out_dir = dir.path("both");
  both.hardware = "h100-sxm-ib400";
  EXPECT_THROW(calibrate_cost_model(pool(), both, compute_timer, comm_timer), InputError);
  EXPECT_FALSE(fs::exists(dir.path("both")));
  // Too few plans to fit.
  CommCalibrationData few;
  few.tuning.resize(2);
  few.held_out.resize(1);
  EXPECT_THROW(fit_comm_calibration(*base, CommCorrection{}, few), InputError);
  CalibrateConfig untimed = config;
  untimed.out_dir = dir.path("untimed");
  EXPECT_THROW(calibrate_cost_model(pool(), untimed, compute_timer), std::logic_error);
}

// Too few plans left to fit after the hold-out is found right after timing them: calibrate refuses
// before it measures a single compute set (which would take minutes on real kernels).
TEST(Calibrate, TooFewCommPlansToFitAreRefusedBeforeAnyComputeSet) {
  TempDir dir;
  FakeCommHost host;
  int compute_sets = 0;
  ComputeTimer compute_timer = [&](const std::vector<Table>& shards, uint64_t seed) {
    ++compute_sets;
    return timed_as_predicted(host.base)(shards, seed);
  };
  // Half held out, 8 plans: some seed leaves fewer than 3 to fit on.
  int refused = 0;
  for (uint64_t seed = 0; seed < 40 && refused == 0; ++seed) {
    CalibrateConfig config = quick_config(dir.path(fmt::format("s{}", seed)), 30);
    config.sampling.seed = seed;
    config.holdout_fraction = 0.5;
    config.comm_ranks = 4;
    config.comm_plans = 8;
    config.epochs = 1;
    try {
      calibrate_cost_model(pool(), config, compute_timer, host.timer);
    } catch (const InputError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("too few"), std::string::npos) << e.what();
      EXPECT_EQ(compute_sets, 0) << "seed " << seed;
      EXPECT_TRUE(fs::exists(fs::path(config.out_dir) / "calibration" / "comm-plans.json"));
      EXPECT_FALSE(fs::exists(fs::path(config.out_dir) / "meta.json"));
    }
    compute_sets = 0;
  }
  EXPECT_EQ(refused, 1);
}

// A fake host timed once: how the plans split into tuning and held-out parts.
CommCalibrationData timed_plans(const std::string& path, int64_t plans, uint64_t seed, double holdout_fraction,
                                const CommTimer& timer, std::shared_ptr<const CostModel> base) {
  CommCalibrationConfig config;
  config.world_size = 4;
  config.plans = plans;
  config.holdout_fraction = holdout_fraction;
  config.sampling.seed = seed;
  config.sampling.memory_cap_bytes = 256ll << 20;
  config.data_path = path;
  config.settings = {{"seed", seed}};
  return time_calibration_plans(pool(), config, base, timer);
}

TEST(Calibrate, EveryCommFitIsJudgedAndAReRunWithFewerPlansFitsOnTheFirst) {
  TempDir dir;
  FakeCommHost host;
  // At a 5% hold-out, 8 plans draw no held-out index for most seeds: the last plan is held out then.
  int none_drawn = 0;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    CommCalibrationData data =
        timed_plans(dir.path(fmt::format("p{}.json", seed)), 8, seed, 0.05, host.timer, host.base);
    ASSERT_EQ(data.tuning.size() + data.held_out.size(), 8u);
    EXPECT_GE(data.held_out.size(), 1u) << "seed " << seed;
    if (data.held_out.size() == 1) ++none_drawn;
  }
  EXPECT_GT(none_drawn, 0);
  // 16 timed, then 10 asked for: the fit uses the first 10 and times nothing again.
  const std::string path = dir.path("resume.json");
  timed_plans(path, 16, 3, 0.2, host.timer, host.base);
  const int calls = host.calls;
  CommCalibrationData fewer = timed_plans(path, 10, 3, 0.2, host.timer, host.base);
  EXPECT_EQ(host.calls, calls);
  EXPECT_EQ(fewer.tuning.size() + fewer.held_out.size(), 10u);
  EXPECT_EQ(fewer.timed_now, 0);
}

TEST(Calibrate, ACommFitOnTimingsThatAreNotNumbersKeepsTheBase) {
  TempDir dir;
  FakeCommHost host;
  std::shared_ptr<const CostModel> base = host.base;
  CommCalibrationData data = timed_plans(dir.path("p.json"), 16, 0, 0.2, host.timer, base);
  EXPECT_FALSE(fit_comm_calibration(*base, CommCorrection{}, data).kept_base);
  data.held_out.front().bw_ms.front() = std::nan("");
  EXPECT_TRUE(fit_comm_calibration(*base, CommCorrection{}, data).kept_base);
  // A timer that reports no number leaves its plans untimed, for a re-run to time again.
  CommTimer broken = [](const std::vector<CommToMeasure>& plans, int64_t /*batch_size*/) {
    std::vector<std::optional<MeasuredComm>> out;
    for (const CommToMeasure& p : plans) {
      MeasuredComm m;
      m.fw_ms.assign(p.dim_sums.size(), std::nan(""));
      m.bw_ms.assign(p.dim_sums.size(), 1.0);
      out.push_back(std::move(m));
    }
    return out;
  };
  CommCalibrationData untimed = timed_plans(dir.path("broken.json"), 8, 0, 0.2, broken, base);
  EXPECT_TRUE(untimed.interrupted);
  EXPECT_EQ(untimed.timed_now, 0);
  EXPECT_TRUE(untimed.tuning.empty() && untimed.held_out.empty());
}

TEST(Calibrate, SetsLookLikePlansAndCoverRandomDraws) {
  CalibrationSampling sampling;
  sampling.memory_cap_bytes = 512ll << 20;
  auto model = load_cost_model(bundled_model());
  std::shared_ptr<const CostModel> shared = std::move(model);
  std::vector<Table> tables = pool();
  int from_plans = 0;
  std::size_t most_shards = 0;
  for (int64_t i = 0; i < 40; ++i) {
    CalibrationSet set = draw_calibration_set(tables, sampling, shared, i);
    ASSERT_FALSE(set.shards.empty());
    int64_t bytes = 0;
    for (const auto& s : set.shards) bytes += table_memory_bytes(s, Optimizer::kSgd);
    EXPECT_LE(bytes, sampling.memory_cap_bytes) << set.origin;
    if (set.origin.rfind("plan:", 0) == 0) ++from_plans;
    most_shards = std::max(most_shards, set.shards.size());
    // Sample i depends only on (seed, i, model).
    EXPECT_EQ(draw_calibration_set(tables, sampling, shared, i).origin, set.origin);
  }
  EXPECT_GE(from_plans, 12);
  EXPECT_GE(most_shards, 8u);
}

TEST(Calibrate, TooFewSetsInTheTimeIsBadInputNotAModel) {
  TempDir dir;
  CalibrateConfig config = quick_config(dir.path("slow"), 100);
  config.minutes = 0.2;  // 12 s, of which 10 s are kept for fine-tuning: 2 s to measure
  ComputeTimer slow = [](const std::vector<Table>&, uint64_t) {
    std::this_thread::sleep_for(1s);
    return ComputeTiming{1.0, {1.0}, {}};
  };
  EXPECT_THROW(calibrate_cost_model(pool(), config, slow), InputError);
  EXPECT_FALSE(fs::exists(fs::path(config.out_dir) / "meta.json"));
}

// The command on real kernels at tiny sizes.
std::vector<std::string> cli_args(const std::string& out, int samples) {
  return {"calibrate",
          "--out",
          out,
          "--samples",
          std::to_string(samples),
          "--batch-size",
          "16",
          "--iterations",
          "1",
          "--warmup",
          "0",
          "--mem-cap",
          "16MiB",
          "--max-tables",
          "4",
          "--epochs",
          "5",
          "--minutes",
          "10"};
}

TEST(CalibrateCli, InterruptKeepsTheSetsAndARerunResumesThenWritesTheModel) {
  TempDir dir;
  const std::string out = dir.path("model");
  const std::string samples = out + "/calibration/samples.jsonl";
  {
    Process process(cli_args(out, 1000000));
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline && (!fs::exists(samples) || read_lines(samples).size() < 3)) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_GE(read_lines(samples).size(), 3u) << process.err();
    process.signal(SIGINT);
    auto code = process.wait_for(120s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 1) << process.err();
    EXPECT_NE(process.err().find("re-run the same command to resume"), std::string::npos) << process.err();
    EXPECT_FALSE(fs::exists(out + "/meta.json"));
  }
  const std::size_t kept = read_lines(samples).size();
  const int target = static_cast<int>(kept) + 40;
  Process rerun(cli_args(out, target));
  auto code = rerun.wait_for(300s);
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << rerun.err();
  EXPECT_NE(rerun.err().find(fmt::format("resuming after {} measured sets", kept)), std::string::npos) << rerun.err();
  EXPECT_EQ(read_lines(samples).size(), static_cast<std::size_t>(target));
  EXPECT_NE(rerun.out().find("fine-tuned"), std::string::npos) << rerun.out();
  nlohmann::json meta = read_json_file(out + "/meta.json");
  EXPECT_EQ(meta["calibration"]["samples"], target);
  EXPECT_EQ(meta["hardware"]["compute"]["device"], "cpu");
  // Other sampling settings never mix into the same directory.
  std::vector<std::string> other = cli_args(out, target + 5);
  other.push_back("--seed");
  other.push_back("9");
  Process mixed(other);
  auto mixed_code = mixed.wait_for(120s);
  ASSERT_TRUE(mixed_code.has_value());
  EXPECT_EQ(*mixed_code, 2) << mixed.err();
  EXPECT_NE(mixed.err().find("--out: "), std::string::npos) << mixed.err();
  EXPECT_NE(mixed.err().find("different collection"), std::string::npos) << mixed.err();
}

// --comm-ranks on real Gloo ranks of this host: the timed plans are kept, the fit is reported and written.
TEST(CalibrateCli, CommRanksTimesRealAllToAllsAndReportsTheFit) {
  TempDir dir;
  const std::string out = dir.path("host");
  std::vector<std::string> args = cli_args(out, 24);
  args.insert(args.end(), {"--comm-ranks", "2", "--comm-plans", "8"});
  Process process(args);
  auto code = process.wait_for(300s);
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << process.err();
  EXPECT_NE(process.out().find("all-to-all error per device on"), std::string::npos) << process.out();
  nlohmann::json meta = read_json_file(out + "/meta.json");
  const auto& fit = meta["calibration"]["comm_fit"];
  EXPECT_EQ(fit["world_size"], 2);
  EXPECT_EQ(fit["tuning_plans"].get<int>() + fit["held_out_plans"].get<int>(), 8);
  // Eight noisy plans may fit no better than the base on the held-out ones: then the base's comm stays.
  EXPECT_EQ(meta["comm"].contains("correction"), !fit["kept_base"].get<bool>()) << fit.dump();
  nlohmann::json timed = read_json_file(out + "/calibration/comm-plans.json");
  ASSERT_EQ(timed["plans"].size(), 8u);
  for (const auto& plan : timed["plans"]) {
    ASSERT_EQ(plan["fw_ms"].size(), 2u);
    for (double ms : plan["bw_ms"]) EXPECT_GT(ms, 0.0);
  }
}

TEST(CalibrateCli, BadFlagsNameTheFlag) {
  TempDir dir;
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{{"--samples", "2"},
                                                                                    {"--minutes", "0"},
                                                                                    {"--holdout-fraction", "0.9"},
                                                                                    {"--device", "tpu"},
                                                                                    {"--comm-ranks", "1"},
                                                                                    {"--comm-plans", "2"}}) {
    std::vector<std::string> args = {"calibrate", "--out", dir.path("m"), flag, value};
    if (flag == "--comm-plans") args.insert(args.end(), {"--comm-ranks", "2"});
    Process process(args);
    auto code = process.wait_for(60s);
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 2) << flag;
    EXPECT_NE(process.err().find(flag), std::string::npos) << process.err();
  }
}

}  // namespace
}  // namespace shardplan

namespace shardplan {
namespace {

// Hardware provenance: the plan file and report name it; planning beyond the measured world sizes and
// measuring on other hardware warn.
class Provenance : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = dir_.write("tables.json", R"([
      {"name": "a", "rows": 20000, "dim": 32, "pooling_factor": 4},
      {"name": "b", "rows": 5000, "dim": 16, "pooling_factor": 2},
      {"name": "c", "rows": 80000, "dim": 64, "pooling_factor": 1},
      {"name": "d", "rows": 1000, "dim": 8, "pooling_factor": 9}])");
  }
  int run(const std::vector<std::string>& args, std::string* err = nullptr, std::string* out = nullptr) {
    Process process(args);
    auto code = process.wait_for(180s);
    if (err) *err = process.err();
    if (out) *out = process.out();
    return code.value_or(-1);
  }
  TempDir dir_;
  std::string tables_;
};

TEST_F(Provenance, PlanFileAndReportNameTheModelsHardware) {
  std::string err, out;
  const std::string plan = dir_.path("plan.json");
  ASSERT_EQ(run({"--tables", tables_, "--gpus", "16", "-o", plan, "--no-compare", "--model", "cpu-2core"}, &err, &out),
            0)
      << err;
  nlohmann::json doc = read_json_file(plan);
  EXPECT_EQ(doc["cost_model_hardware"]["comm"]["world_sizes"], nlohmann::json::parse("[2, 4, 8]"));
  EXPECT_FALSE(doc["cost_model_hardware"]["compute"]["device_model"].get<std::string>().empty());
  EXPECT_NE(out.find("cost model measured on: compute cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("note: 16 GPUs is beyond the all-to-alls"), std::string::npos) << out;
  EXPECT_NE(err.find("16 GPUs is beyond the all-to-alls the cost model measured (at most 8 ranks"), std::string::npos)
      << err;
  ASSERT_EQ(run({"--tables", tables_, "--gpus", "4", "-o", plan, "--no-compare", "--model", "cpu-2core"}, &err, &out),
            0)
      << err;
  EXPECT_EQ(err.find("beyond the all-to-alls"), std::string::npos) << err;
}

TEST_F(Provenance, PlanningForAnotherGpuThanTheModelsWarns) {
  std::string err;
  const std::string plan = dir_.path("plan.json");
  const std::vector<std::string> args{"--tables", tables_, "--gpus", "8", "-o", plan, "--no-compare"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), args.begin(), args.end());
    return more;
  };
  // The bundled model was timed on an H100: so is its profile's GPU, and an A100 profile's is another.
  ASSERT_EQ(run(with({}), &err), 0) << err;
  EXPECT_EQ(err.find("compute was timed on"), std::string::npos) << err;
  ASSERT_EQ(run(with({"--hardware", "a100-sxm-ib200"}), &err), 0) << err;
  EXPECT_NE(err.find("compute was timed on NVIDIA H100 80GB HBM3 (cuda) and this plan is for NVIDIA A100-SXM4-80GB"),
            std::string::npos)
      << err;
  // A CPU-timed model for a named GPU; the flag wins over the profile.
  ASSERT_EQ(run(with({"--model", "cpu-2core", "--device-model", "NVIDIA B200"}), &err), 0) << err;
  EXPECT_NE(err.find("(cpu) and this plan is for NVIDIA B200"), std::string::npos) << err;
  ASSERT_EQ(run(with({"--hardware", "a100-sxm-ib200", "--device-model", "NVIDIA H100 80GB HBM3"}), &err), 0) << err;
  EXPECT_EQ(err.find("compute was timed on"), std::string::npos) << err;
}

TEST_F(Provenance, MeasuringOnOtherHardwareWarns) {
  // A copy of the bundled model that says it was measured elsewhere.
  const fs::path model = dir_.root() / "elsewhere";
  fs::copy(bundled_model(), model, fs::copy_options::recursive);
  nlohmann::json meta = read_json_file((model / "meta.json").string());
  meta["hardware"]["compute"] = {{"device", "cpu"}, {"device_model", "Imaginary CPU 9000"}};
  std::ofstream((model / "meta.json").string(), std::ios::trunc) << meta.dump(2);
  const std::string plan = dir_.path("plan.json");
  std::string err, out;
  ASSERT_EQ(run({"--tables", tables_, "--gpus", "2", "-o", plan, "--no-compare", "--model", model.string()}, &err), 0)
      << err;
  const std::vector<std::string> measure = {"--measure", "--measure-batch-size", "16", "--measure-iterations",
                                            "1",         "--measure-rounds",     "1"};
  std::vector<std::string> args = {"evaluate", "--plan", plan, "--tables", tables_, "--model", model.string()};
  args.insert(args.end(), measure.begin(), measure.end());
  ASSERT_EQ(run(args, &err, &out), 0) << err;
  EXPECT_NE(err.find("measured on compute cpu (Imaginary CPU 9000)"), std::string::npos) << err;
  EXPECT_NE(out.find("measured on: compute cpu (Imaginary CPU 9000)"), std::string::npos) << out;
  // The bundled model's hardware is this machine's only where it was collected: no warning when they match.
  meta["hardware"]["compute"]["device_model"] = cpu_model();
  std::ofstream((model / "meta.json").string(), std::ios::trunc) << meta.dump(2);
  ASSERT_EQ(run(args, &err, &out), 0) << err;
  EXPECT_EQ(err.find("this machine measures on"), std::string::npos) << err;
}

}  // namespace
}  // namespace shardplan
