#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/hardware_profile.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/sha256.hpp"
#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_data.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/cost_model/neural_cost_model.hpp"
#include "shardplan/torch/model_files.hpp"
#include "shardplan/torch/pretrain.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;

// Synthetic cost data with a known, learnable law: non-additive compute (a launch cost per width
// group plus gathered bytes) and comm growing with the widths and the wait.
fs::path write_synthetic_data(const std::string& name, int compute_samples, int comm_samples) {
  fs::path root = fs::temp_directory_path() / ("shardplan-pretrain-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  Rng rng(42);
  {
    CostDataWriter writer((root / "compute").string(),
                          {{"kind", "compute"}, {"config", {{"synthetic", true}}}, {"device", "test"}});
    for (int i = 0; i < compute_samples; ++i) {
      ComputeSample s;
      int n = 1 + static_cast<int>(rng.below(6));
      double latency = 0.05;
      for (int k = 0; k < n; ++k) {
        ShardFeatures f{static_cast<int64_t>(100 + rng.below(1'000'000)), 4 * static_cast<int>(1 + rng.below(32)),
                        1.0 + 30.0 * rng.uniform(), kDlrmAggregateReuseHist};
        latency += 1e-4 * f.pooling_factor * f.dim + 0.02 * std::log(static_cast<double>(f.rows));
        s.shards.push_back(f);
      }
      s.latency_ms = latency;
      writer.append(compute_sample_to_json(s));
    }
  }
  for (int w : {2, 4, 8}) {
    CostDataWriter writer((root / "comm" / ("w" + std::to_string(w))).string(),
                          {{"kind", "comm"}, {"config", {{"world_size", w}}}, {"world_size", w}});
    for (int i = 0; i < comm_samples; ++i) {
      CommSample s;
      s.world_size = w;
      double max_delay = 0.0;
      for (int r = 0; r < w; ++r) {
        s.dim_sums.push_back(static_cast<int64_t>(4 * (1 + rng.below(200))));
        s.delays_ms.push_back(2.0 * rng.uniform());
        max_delay = std::max(max_delay, s.delays_ms.back());
      }
      double total = 0;
      for (auto d : s.dim_sums) total += static_cast<double>(d);
      for (int r = 0; r < w; ++r) {
        s.fw_ms.push_back(0.1 + 0.001 * total / w + (max_delay - s.delays_ms[static_cast<std::size_t>(r)]));
        s.bw_ms.push_back(0.1 + 0.001 * total / w);
      }
      writer.append(comm_sample_to_json(s));
    }
  }
  return root;
}

PretrainConfig quick_config(const fs::path& data, const fs::path& out, int epochs) {
  PretrainConfig c;
  c.data_dir = data.string();
  c.out_dir = out.string();
  c.epochs = epochs;
  c.patience = 50;
  c.learning_rate = 3e-3;
  c.quiet = true;
  c.seed = 3;
  return c;
}

TEST(Pretrain, TrainingReducesErrorAndRoundTripsThroughTheModelDirectory) {
  fs::path data = write_synthetic_data("train", 400, 60);
  fs::path one_epoch = data / "model-1";
  fs::path trained = data / "model-40";
  nlohmann::json short_meta = pretrain_cost_models(quick_config(data, one_epoch, 1));
  nlohmann::json meta = pretrain_cost_models(quick_config(data, trained, 40));
  double mape_short = short_meta["metrics"]["compute"]["mape_percent"];
  double mape = meta["metrics"]["compute"]["mape_percent"];
  EXPECT_LT(mape, mape_short) << "1 epoch: " << mape_short << "%, 40 epochs: " << mape << "%";
  EXPECT_LT(mape, 15.0);
  EXPECT_GT(meta["metrics"]["compute"]["spearman"].get<double>(), 0.9);
  EXPECT_EQ(meta["metrics"]["comm_holdout"]["world_size"], 4);
  for (const char* key : {"format", "feature_schema", "compute", "comm", "training", "data", "metrics"}) {
    EXPECT_TRUE(meta.contains(key)) << key;
  }

  // Loading twice gives identical predictions; evaluating on the data reproduces sensible metrics.
  auto a = load_cost_model(trained.string());
  auto b = load_cost_model(trained.string());
  std::vector<std::vector<ShardFeatures>> sets = {
      {{1000, 64, 3.0, kDlrmAggregateReuseHist}},
      {{50000, 16, 10.0, kDlrmAggregateReuseHist}, {700, 128, 1.0, kDlrmAggregateReuseHist}}};
  EXPECT_EQ(a->predict_compute(sets), b->predict_compute(sets));
  nlohmann::json eval = evaluate_cost_model(trained.string(), data.string());
  EXPECT_LT(eval["compute"]["mape_percent"].get<double>(), 20.0);
  EXPECT_TRUE(eval["comm"].contains("fw"));
  fs::remove_all(data);
}

// Every device's predicted all-to-all, forward and backward, for fixed compute times.
void predict(const CostModel& model, const std::vector<int64_t>& widths, std::vector<double>& fw,
             std::vector<double>& bw) {
  std::vector<double> compute;
  for (std::size_t r = 0; r < widths.size(); ++r) compute.push_back(1.0 + 0.25 * static_cast<double>(r % 3));
  model.predict_comm(widths, compute, fw, bw);
}

// More bytes never cost less: widening one device never lowers any device's predicted all-to-all, for
// world sizes inside and far beyond the measured ones.
void expect_monotone_in_bytes(const CostModel& model, uint64_t seed) {
  Rng rng(seed);
  for (int trial = 0; trial < 150; ++trial) {
    const std::size_t n = trial % 3 == 0 ? 64 + rng.below(200) : 2 + rng.below(12);
    std::vector<int64_t> widths;
    for (std::size_t r = 0; r < n; ++r) widths.push_back(static_cast<int64_t>(4 * (1 + rng.below(400))));
    std::vector<double> fw0, bw0, fw1, bw1;
    predict(model, widths, fw0, bw0);
    widths[rng.below(n)] += 4 * static_cast<int64_t>(1 + rng.below(300));
    predict(model, widths, fw1, bw1);
    for (std::size_t r = 0; r < n; ++r) {
      ASSERT_GE(fw1[r], fw0[r] * (1 - 1e-6)) << "trial " << trial << " rank " << r << " of " << n;
      ASSERT_GE(bw1[r], bw0[r] * (1 - 1e-6)) << "trial " << trial << " rank " << r << " of " << n;
      ASSERT_TRUE(std::isfinite(fw1[r]) && fw1[r] > 0);
    }
  }
}

TEST(Pretrain, HierarchicalCommModelIsMonotoneInBytesAndReportsTheStructureAlone) {
  fs::path data = write_synthetic_data("hierarchical", 120, 60);
  nlohmann::json meta = pretrain_cost_models(quick_config(data, data / "model", 20));
  EXPECT_EQ(meta["comm"]["form"], "hierarchical");
  EXPECT_EQ(meta["comm"]["fabric"]["name"], "fitted");
  EXPECT_TRUE(meta["metrics"]["comm_structure_alone"].contains("bw"));
  EXPECT_TRUE(meta["metrics"]["comm_holdout"].contains("structure_alone"));
  auto model = load_cost_model((data / "model").string());
  expect_monotone_in_bytes(*model, 11);
  fs::remove_all(data);
}

// The backward all-to-all starts together (after the dense layers; timed after a barrier): a plan's
// compute skew must not buy it a cheaper backward, however the network weighs the delays.
void expect_backward_ignores_start_delays(const CostModel& model) {
  const std::vector<int64_t> widths = {100, 400, 250, 800, 60, 90, 300, 120};
  const std::vector<double> together(widths.size(), 5.0);
  const std::vector<double> skewed = {5.0, 9.0, 1.0, 14.0, 5.0, 2.0, 7.5, 30.0};
  std::vector<double> fw_together, bw_together, fw_skewed, bw_skewed;
  model.predict_comm(widths, together, fw_together, bw_together);
  model.predict_comm(widths, skewed, fw_skewed, bw_skewed);
  EXPECT_EQ(bw_together, bw_skewed);
  // The forward still waits for the latest starter: 29 ms for the device that starts at 1 ms.
  EXPECT_GT(fw_skewed[2], 29.0);
  EXPECT_LT(fw_together[2], 29.0);
}

TEST(Pretrain, BackwardAllToAllIgnoresStartDelays) {
  fs::path data = write_synthetic_data("backward", 120, 60);
  nlohmann::json meta = pretrain_cost_models(quick_config(data, data / "model", 10));
  EXPECT_EQ(meta["comm"]["backward_context"], kBackwardWithoutDelays);
  auto model = load_cost_model((data / "model").string());
  EXPECT_TRUE(model->comm_spec().backward_without_delays);
  expect_backward_ignores_start_delays(*model);
  expect_backward_ignores_start_delays(*load_cost_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/cpu-2core"));

  // Per world size, with the median ratio that shows a size's bias.
  nlohmann::json eval = evaluate_cost_model((data / "model").string(), (data / "comm").string());
  for (const char* size : {"2", "4", "8"}) {
    ASSERT_TRUE(eval["comm"]["by_world_size"].contains(size)) << eval["comm"].dump();
    EXPECT_GT(eval["comm"]["by_world_size"][size]["bw"]["median_ratio"].get<double>(), 0.0);
    // and how the slowest device answers width imbalance, measured and predicted on the same samples
    const auto& imbalance = eval["comm"]["bw_slowest_imbalance"][size];
    EXPECT_EQ(imbalance["count"].get<int64_t>(), 60) << imbalance.dump();
    EXPECT_TRUE(imbalance["measured_exponent"].is_number() && imbalance["predicted_exponent"].is_number());
  }

  // Models trained before it saw the delays in both outputs, and still load that way; an unknown
  // context is refused by name.
  nlohmann::json edited = nlohmann::json::parse(std::ifstream(data / "model" / "meta.json"));
  edited["comm"].erase("backward_context");
  std::ofstream(data / "model" / "meta.json", std::ios::trunc) << edited.dump();
  EXPECT_FALSE(load_cost_model((data / "model").string())->comm_spec().backward_without_delays);
  edited["comm"]["backward_context"] = "the forward's";
  std::ofstream(data / "model" / "meta.json", std::ios::trunc) << edited.dump();
  try {
    load_cost_model((data / "model").string());
    ADD_FAILURE() << "an unknown comm.backward_context loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("comm.backward_context"), std::string::npos) << e.what();
  }
  fs::remove_all(data);
}

TEST(Pretrain, SamplesFromSeveralHostLayoutsTrainTogether) {
  fs::path data = write_synthetic_data("layouts", 120, 40);
  // Emulated hosts: 2 and 4 ranks per host, slower between hosts.
  Rng rng(9);
  for (int per_host : {2, 4}) {
    CostDataWriter writer(
        (data / "comm" / ("h" + std::to_string(per_host))).string(),
        {{"kind", "comm"}, {"config", {{"world_size", 8}, {"gpus_per_host", per_host}}}, {"world_size", 8}});
    for (int i = 0; i < 40; ++i) {
      CommSample s;
      s.world_size = 8;
      s.devices_per_host = per_host;
      double total = 0;
      for (int r = 0; r < 8; ++r) {
        s.dim_sums.push_back(static_cast<int64_t>(4 * (1 + rng.below(200))));
        s.delays_ms.push_back(0.0);
        total += static_cast<double>(s.dim_sums.back());
      }
      for (int r = 0; r < 8; ++r) {
        s.fw_ms.push_back(0.2 + 0.004 * total * (8 - per_host) / 8);
        s.bw_ms.push_back(s.fw_ms.back());
      }
      writer.append(comm_sample_to_json(s));
    }
  }
  nlohmann::json meta = pretrain_cost_models(quick_config(data, data / "model", 10));
  EXPECT_EQ(meta["comm"]["fabric"]["gpus_per_host"], 4);  // the largest layout measured
  EXPECT_EQ(load_cost_model((data / "model").string())->comm_spec().form, CommForm::kHierarchical);
  nlohmann::json eval = evaluate_cost_model((data / "model").string(), (data / "comm" / "h2").string());
  EXPECT_TRUE(eval["comm"].contains("bw"));
  fs::remove_all(data);
}

TEST(Pretrain, EvaluationScoresEachSamplesSlowestDeviceApart) {
  // Measured times equal to the bundled model's prediction on each sample's slowest device and half of
  // it on every other device: every device but one is 100% off, the all-to-all a step waits for is not.
  const std::string bundled = std::string(SHARDPLAN_SOURCE_DIR) + "/models/cpu-2core";
  auto model = load_cost_model(bundled);
  fs::path data = fs::temp_directory_path() / "shardplan_slowest_eval";
  fs::remove_all(data);
  CostDataWriter writer((data / "comm" / "w8").string(),
                        {{"kind", "comm"}, {"config", {{"world_size", 8}}}, {"world_size", 8}});
  Rng rng(5);
  for (int i = 0; i < 30; ++i) {
    CommSample s;
    s.world_size = 8;
    s.devices_per_host = 8;
    for (int r = 0; r < 8; ++r) {
      s.dim_sums.push_back(static_cast<int64_t>(4 * (1 + rng.below(200))));
      s.delays_ms.push_back(static_cast<double>(rng.below(50)) / 10.0);
    }
    std::vector<double> fw, bw;
    model->predict_comm(s.dim_sums, s.delays_ms, fw, bw);
    const auto fw_max = std::max_element(fw.begin(), fw.end()) - fw.begin();
    const auto bw_max = std::max_element(bw.begin(), bw.end()) - bw.begin();
    for (std::ptrdiff_t r = 0; r < 8; ++r) {
      s.fw_ms.push_back(r == fw_max ? fw[static_cast<std::size_t>(r)] : fw[static_cast<std::size_t>(r)] / 2);
      s.bw_ms.push_back(r == bw_max ? bw[static_cast<std::size_t>(r)] : bw[static_cast<std::size_t>(r)] / 2);
    }
    writer.append(comm_sample_to_json(s));
  }
  nlohmann::json eval = evaluate_cost_model(bundled, data.string());
  EXPECT_EQ(eval["comm"]["bw_slowest"]["count"], 30);
  EXPECT_LT(eval["comm"]["fw_slowest"]["mape_percent"].get<double>(), 0.1) << eval["comm"].dump();
  EXPECT_LT(eval["comm"]["bw_slowest"]["mape_percent"].get<double>(), 0.1) << eval["comm"].dump();
  EXPECT_GT(eval["comm"]["bw"]["mape_percent"].get<double>(), 80.0);
  fs::remove_all(data);
}

TEST(Pretrain, BundledModelIsMonotoneInBytes) {
  auto model = load_cost_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/cpu-2core");
  ASSERT_EQ(model->comm_spec().form, CommForm::kHierarchical);
  expect_monotone_in_bytes(*model, 5);
}

TEST(Pretrain, OtherHardwareGetsTheStructureAloneAndTheMeasuredOneItsCorrection) {
  auto model = load_cost_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/cpu-2core");
  const std::vector<int64_t> widths = {100, 400, 250, 800, 60, 90, 300, 120, 500};
  std::vector<double> fw_own, bw_own, fw, bw, structure;
  predict(*model, widths, fw_own, bw_own);
  CommFabric same = model->comm_spec().fabric;
  model->plan_for_hardware(same);
  EXPECT_FALSE(model->comm_structure_only());
  predict(*model, widths, fw, bw);
  EXPECT_EQ(bw, bw_own);
  CommFabric other = same;
  other.name = "elsewhere";
  other.intra_bytes_per_ms *= 100;
  model->plan_for_hardware(other);
  EXPECT_TRUE(model->comm_structure_only());
  EXPECT_TRUE(model->hardware().comm_structure_only);
  predict(*model, widths, fw, bw);
  other.batch_size = same.batch_size;
  hierarchical_alltoall_ms(other, widths, structure);
  EXPECT_EQ(bw, structure);
}

TEST(Pretrain, SameSeedGivesTheSameModel) {
  fs::path data = write_synthetic_data("determinism", 150, 20);
  auto first = pretrain_cost_models(quick_config(data, data / "a", 3));
  auto second = pretrain_cost_models(quick_config(data, data / "b", 3));
  EXPECT_EQ(first["compute"]["feature_mean"], second["compute"]["feature_mean"]);
  EXPECT_EQ(first["metrics"], second["metrics"]);
  fs::remove_all(data);
}

TEST(Pretrain, LeavesOutDisturbedMeasurements) {
  fs::path data = write_synthetic_data("disturbed", 150, 20);
  {
    CostDataWriter writer((data / "compute").string(),
                          {{"kind", "compute"}, {"config", {{"synthetic", true}}}, {"device", "test"}});
    for (int i = 0; i < 10; ++i) {
      ComputeSample s;
      s.shards.push_back({1000, 16, 2.0, kDlrmAggregateReuseHist});
      s.latency_ms = 1.0;
      s.iterations_ms = {0.9, 1.0, 3.0};  // one step disturbed by other work
      writer.append(compute_sample_to_json(s));
    }
  }
  PretrainConfig config = quick_config(data, data / "model", 1);
  EXPECT_EQ(pretrain_cost_models(config)["data"]["compute"]["samples"], 150);
  config.max_iteration_spread = 0;
  config.out_dir = (data / "model-all").string();
  EXPECT_EQ(pretrain_cost_models(config)["data"]["compute"]["samples"], 160);
  fs::remove_all(data);
}

TEST(Pretrain, ComputeOnlyDataKeepsTheCommModelOfAnother) {
  fs::path data = write_synthetic_data("compute-only", 200, 40);
  fs::path full = data / "full-model";
  pretrain_cost_models(quick_config(data, full, 5));
  fs::path compute_only = data / "compute-only";
  fs::create_directories(compute_only);
  fs::copy(data / "compute", compute_only / "compute");

  // Without a model to take the comm part from, compute-only data cannot make a whole model; the error names
  // that setting (the CLI's --comm-from) and says what to do.
  try {
    pretrain_cost_models(quick_config(compute_only, data / "refused", 5));
    ADD_FAILURE() << "expected a SettingError";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "comm model source");
    EXPECT_NE(e.rule().find("no comm cost data"), std::string::npos) << e.what();
  }

  PretrainConfig config = quick_config(compute_only, data / "kept-comm", 5);
  config.comm_from = full.string();
  nlohmann::json meta = pretrain_cost_models(config);
  EXPECT_EQ(meta["training"]["comm_from"], full.string());
  EXPECT_EQ(meta["hardware"]["comm"]["from_model"], full.string());
  EXPECT_NE(meta["metrics"]["comm_source"].get<std::string>().find(full.string()), std::string::npos);
  auto kept = load_cost_model((data / "kept-comm").string());
  auto donor = load_cost_model(full.string());
  std::vector<double> fw_a, bw_a, fw_b, bw_b;
  kept->predict_comm({16, 400, 80, 8}, {0.0, 1.0, 0.3, 2.0}, fw_a, bw_a);
  donor->predict_comm({16, 400, 80, 8}, {0.0, 1.0, 0.3, 2.0}, fw_b, bw_b);
  EXPECT_EQ(fw_a, fw_b);
  EXPECT_EQ(bw_a, bw_b);
  EXPECT_EQ(kept->hardware().comm_world_sizes, (std::vector<int>{2, 4, 8}));
  EXPECT_LT(meta["metrics"]["compute"]["mape_percent"].get<double>(), 100.0);
  fs::remove_all(data);
}

TEST(Pretrain, ComputeOnlyDataWithAProfileEstimatesTheAllToAllOnItsLinksAtTheComputeBatch) {
  fs::path data = write_synthetic_data("gpu-compute", 200, 40);
  fs::path full = data / "full-model";
  pretrain_cost_models(quick_config(data, full, 5));
  // A GPU's compute data: timed at batch 65536, where the donor's all-to-alls were timed at 2048.
  fs::path gpu = data / "gpu";
  {
    CostData measured = load_cost_data((data / "compute").string(), CostKind::kCompute);
    CostDataWriter writer(
        (gpu / "compute").string(),
        {{"kind", "compute"}, {"config", {{"synthetic", true}}}, {"device", "cuda"}, {"batch_size", 65536}});
    for (const auto& s : measured.compute) writer.append(compute_sample_to_json(s));
  }
  const std::string profile_path = std::string(SHARDPLAN_SOURCE_DIR) + "/data/hardware/h100-sxm-ib400.json";
  PretrainConfig config = quick_config(gpu, data / "gpu-model", 5);
  config.comm_from = full.string();
  config.hardware = profile_path;
  nlohmann::json meta = pretrain_cost_models(config);
  EXPECT_EQ(meta["comm"]["structure_only"], true);
  EXPECT_EQ(meta["comm"]["fabric"]["batch_size"], 65536);
  EXPECT_EQ(meta["hardware"]["comm"]["profile"], "h100-sxm-ib400");
  EXPECT_FALSE(meta["hardware"]["comm"].contains("world_sizes"));  // no all-to-all was measured for it
  EXPECT_TRUE(meta["metrics"]["comm"].is_null());
  EXPECT_NE(meta["metrics"]["comm_source"].get<std::string>().find("not measured"), std::string::npos);

  auto model = load_cost_model((data / "gpu-model").string());
  EXPECT_TRUE(model->comm_structure_only());
  const CommFabric links = fabric_of(load_hardware_profile(profile_path), 65536);
  const std::vector<int64_t> widths = {100, 400, 250, 800};
  std::vector<double> fw, bw, structure;
  predict(*model, widths, fw, bw);
  hierarchical_alltoall_ms(links, widths, structure);
  EXPECT_EQ(bw, structure);
  // Planning for the same profile by name must not take the donor's net for a measurement of it.
  model->plan_for_hardware(fabric_of(load_hardware_profile(profile_path), 0));
  EXPECT_TRUE(model->comm_structure_only());
  predict(*model, widths, fw, bw);
  EXPECT_EQ(bw, structure);
  EXPECT_EQ(describe_hardware(model->hardware()).find("gloo"), std::string::npos)
      << describe_hardware(model->hardware());
  fs::remove_all(data);
}

TEST(Pretrain, BundledH100ModelIsFoundByNameAndPlansItsAllToAllOnNvlink) {
  auto model = load_cost_model("h100");
  EXPECT_TRUE(model->comm_structure_only());
  EXPECT_EQ(model->hardware().compute_device, "cuda");
  EXPECT_EQ(model->hardware().compute_device_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(model->comm_spec().fabric.name, "h100-sxm-ib400");
  EXPECT_EQ(model->comm_spec().fabric.batch_size, 65536);
}

void expect_load_error(const fs::path& model, const std::string& fragment) {
  try {
    load_cost_model(model.string());
    ADD_FAILURE() << "expected an error containing " << fragment;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ModelFiles, MissingOrCorruptFilesAreBadInput) {
  fs::path data = write_synthetic_data("corrupt", 150, 20);
  fs::path model = data / "model";
  pretrain_cost_models(quick_config(data, model, 1));
  auto expect_error = [&](const std::string& fragment) { expect_load_error(model, fragment); };
  { std::ofstream(model / "comm.pt", std::ios::trunc) << "not a torch file"; }
  expect_error("comm.pt: not a torch.save zip archive");
  fs::remove(model / "comm.pt");
  expect_error("comm.pt: missing");
  {
    std::ofstream(model / "meta.json", std::ios::trunc)
        << "{\"format\": \"shard-plan-model/2\", \"feature_schema\": 99}";
  }
  expect_error("feature_schema 99");
  fs::remove(model / "meta.json");
  expect_error("meta.json: no such file");
  EXPECT_THROW(load_cost_model((data / "nowhere").string()), InputError);
  fs::remove_all(data);
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Issue 43: weights with 64 bytes flipped loaded silently. A model's files are checked on load against
// their zip CRCs and the SHA-256 the writer records in meta.json; a meta without the record (the bundled
// models, written before it) still gets the CRC check.
TEST(ModelFiles, WeightsAreCheckedAgainstTheirCrcsAndRecordedHashes) {
  fs::path data = write_synthetic_data("verify", 150, 20);
  fs::path model = data / "model";
  nlohmann::json meta = pretrain_cost_models(quick_config(data, model, 1));
  const std::string compute = file_bytes(model / "compute.pt");
  const nlohmann::json written = nlohmann::json::parse(file_bytes(model / "meta.json"));
  EXPECT_EQ(written["files"]["compute.pt"]["sha256"], sha256_hex(compute));
  EXPECT_EQ(written["files"]["comm.pt"]["sha256"], sha256_hex(file_bytes(model / "comm.pt")));
  EXPECT_EQ(meta["files"], written["files"]) << "the metrics' rewrite of meta.json keeps the record";
  load_cost_model(model.string());

  auto expect_error = [&](const std::string& fragment) { expect_load_error(model, fragment); };
  std::string flipped = compute;
  for (std::size_t i = flipped.size() / 2; i < flipped.size() / 2 + 64; ++i)
    flipped[i] = static_cast<char>(~flipped[i]);
  write_bytes(model / "compute.pt", flipped);
  expect_error("compute.pt: zip entry");
  expect_error("recorded: the file is corrupt");

  nlohmann::json without_record = written;
  without_record.erase("files");
  write_bytes(model / "meta.json", without_record.dump());
  expect_error("recorded: the file is corrupt");  // the CRCs still catch it
  write_bytes(model / "compute.pt", compute);
  load_cost_model(model.string());  // an older model: no record, CRCs fine

  nlohmann::json other_hash = written;
  other_hash["files"]["compute.pt"]["sha256"] = sha256_hex("another model's weights");
  write_bytes(model / "meta.json", other_hash.dump());
  expect_error("compute.pt: its SHA-256 is " + sha256_hex(compute));
  other_hash["files"]["compute.pt"]["sha256"] = "not hex";
  write_bytes(model / "meta.json", other_hash.dump());
  expect_error("files.compute.pt.sha256: must be 64 lowercase hex digits");
  fs::remove_all(data);
}

TEST(ModelFiles, TheBundledModelsPassTheirCrcCheck) {
  for (const char* name : {"cpu-2core", "h100", "default"}) EXPECT_NO_THROW(load_cost_model(name)) << name;
}

}  // namespace
}  // namespace shardplan
