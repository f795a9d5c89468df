#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_features.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/cost_model/metrics.hpp"
#include "shardplan/cost_model/model_location.hpp"
#include "shardplan/cost_model/neural_cost_model.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

ShardFeatures shard(int64_t rows, int dim, double pf) { return ShardFeatures{rows, dim, pf, kDlrmAggregateReuseHist}; }

// A small network with fixed, varied weights: enough structure to test invariances.
Mlp fixed_mlp(int inputs, std::vector<int> widths, bool relu_last) {
  Mlp mlp;
  mlp.relu_last = relu_last;
  int in = inputs;
  int k = 1;
  for (int out : widths) {
    DenseLayer layer;
    layer.inputs = in;
    layer.outputs = out;
    for (int i = 0; i < in * out; ++i) layer.weight.push_back(static_cast<float>(((i * 37 + k * 11) % 19) - 9) / 40.0f);
    for (int o = 0; o < out; ++o) layer.bias.push_back(static_cast<float>(o % 5) / 10.0f);
    mlp.layers.push_back(layer);
    in = out;
    ++k;
  }
  return mlp;
}

ComputeModelSpec fixed_compute() {
  ComputeModelSpec compute;
  compute.features.mean.assign(kComputeFeatures, 0.5f);
  compute.features.std.assign(kComputeFeatures, 2.0f);
  compute.shard_net = fixed_mlp(kComputeFeatures, {16, 8}, true);
  compute.alone = fixed_mlp(8, {1}, false);
  compute.head = fixed_mlp(9, {8, 1}, false);
  compute.interaction_range = 1.0f;
  return compute;
}

NeuralCostModel fixed_model() {
  ComputeModelSpec compute = fixed_compute();
  CommModelSpec comm;
  comm.features.mean.assign(kCommFeatures, 0.0f);
  comm.features.std.assign(kCommFeatures, 100.0f);
  comm.net = fixed_mlp(kCommFeatures, {8, 2}, false);
  return NeuralCostModel("fixed", compute, comm);
}

TEST(Metrics, MapeMseAndSpearman) {
  Metrics m = compute_metrics({1.1, 2.0, 2.7}, {1.0, 2.0, 3.0});
  EXPECT_NEAR(m.mape, 100.0 * (0.1 + 0.0 + 0.1) / 3.0, 1e-9);
  EXPECT_NEAR(m.mse, (0.01 + 0.0 + 0.09) / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.spearman, 1.0);
  EXPECT_DOUBLE_EQ(spearman_correlation({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  EXPECT_NEAR(spearman_correlation({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9487, 1e-3);  // ties get average ranks
  // A value that is not a number ranks last (it once looped forever), tied with any other NaN.
  EXPECT_DOUBLE_EQ(spearman_correlation({1, 2, std::nan(""), 3}, {1, 2, 4, 3}), 1.0);
  EXPECT_DOUBLE_EQ(spearman_correlation({std::nan(""), 2, std::nan(""), 3}, {3.5, 1, 3.5, 2}), 1.0);
}

TEST(Metrics, ImbalanceResponseRecoversAPowerLaw) {
  // slowest = 2 x total^0.6 x (widest / mean)^0.2, on layouts that vary in total and in balance
  std::vector<std::vector<int64_t>> layouts = {{100, 100, 100, 100},     {400, 100, 100, 200}, {50, 60, 70, 900},
                                               {1000, 1000, 1000, 3000}, {8, 4, 4, 4},         {0, 0, 0, 0}};
  std::vector<double> slowest;
  for (const auto& widths : layouts) {
    double total = 0, widest = 0;
    for (int64_t w : widths) total += static_cast<double>(w), widest = std::max(widest, static_cast<double>(w));
    slowest.push_back(total > 0 ? 2.0 * std::pow(total, 0.6) * std::pow(widest * 4.0 / total, 0.2) : 1.0);
  }
  std::optional<ImbalanceResponse> fit = imbalance_response(layouts, slowest);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->total_width_exponent, 0.6, 1e-9);
  EXPECT_NEAR(fit->imbalance_exponent, 0.2, 1e-9);
  EXPECT_EQ(fit->count, 5);  // the layout of no width is left out
  // Balanced layouts alone cannot tell the imbalance apart from the intercept.
  EXPECT_FALSE(imbalance_response({{1, 1}, {2, 2}, {5, 5}}, {1.0, 2.0, 3.0}).has_value());
}

TEST(NeuralCostModel, ComputeIsPermutationInvariantOverShards) {
  NeuralCostModel model = fixed_model();
  std::vector<ShardFeatures> set = {shard(1000, 16, 2), shard(5'000'000, 128, 30), shard(70, 4, 0.5)};
  std::vector<ShardFeatures> reversed(set.rbegin(), set.rend());
  auto out = model.predict_compute({set, reversed, {}});
  // The same up to float rounding: the summaries' sums and the head's add in another order.
  EXPECT_NEAR(out[0], out[1], 1e-6 * out[0]);
  EXPECT_GT(out[0], 0.0);
  EXPECT_EQ(out[2], 0.0);  // an empty device costs nothing
}

TEST(NeuralCostModel, SplitPathMatchesBatchedPrediction) {
  NeuralCostModel model = fixed_model();
  std::vector<ShardFeatures> set = {shard(1000, 16, 2), shard(20000, 64, 8)};
  std::vector<float> sum(static_cast<std::size_t>(model.summary_size()), 0.0f);
  std::vector<float> e(sum.size());
  for (const auto& s : set) {
    model.shard_summary(s, e.data());
    for (std::size_t i = 0; i < e.size(); ++i) sum[i] += e[i];
  }
  EXPECT_DOUBLE_EQ(model.compute_from_summary(sum.data()), model.predict_compute({set})[0]);
}

TEST(NeuralCostModel, AddingShardsNeverExplodes) {
  // Far more shards than any sample holds: the additive core grows linearly, the factor stays bounded.
  NeuralCostModel model = fixed_model();
  std::vector<ShardFeatures> one = {shard(20000, 64, 8)};
  std::vector<ShardFeatures> many(200, one.front());
  auto out = model.predict_compute({one, many});
  EXPECT_LE(out[1], 200 * out[0] * std::exp(2.0) + 1e-9);
  EXPECT_GE(out[1], 200 * out[0] * std::exp(-2.0) - 1e-9);
}

TEST(NeuralCostModel, ForwardCommIncludesTheWaitForTheLatestDevice) {
  NeuralCostModel model = fixed_model();
  std::vector<double> fw_even, bw_even, fw_skew, bw_skew;
  model.predict_comm({64, 64}, {5.0, 5.0}, fw_even, bw_even);
  model.predict_comm({64, 64}, {1.0, 5.0}, fw_skew, bw_skew);
  EXPECT_GT(fw_skew[0], 4.0);  // device 0 waits 4 ms for device 1 to start
  EXPECT_LT(fw_skew[1], fw_skew[0]);
}

TEST(Mlp, PreparedLayoutGivesTheSameOutputs) {
  Mlp plain = fixed_mlp(kComputeFeatures, {16, 8, 3}, false);
  Mlp prepared = plain;
  prepared.prepare();
  std::vector<float> x(kComputeFeatures);
  for (int i = 0; i < kComputeFeatures; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 7) - 2.5f;
  float a[3], b[3];
  plain.forward(x.data(), a);
  prepared.forward(x.data(), b);
  for (int o = 0; o < 3; ++o) EXPECT_FLOAT_EQ(a[o], b[o]);
}

TEST(Mlp, BatchedForwardEqualsOneByOneBitForBit) {
  // Wide layers of 12 and 20 outputs (an 8-wide block and a remainder), narrow ones of 3 and 1; inputs
  // with zeros, which the wide path skips.
  for (bool relu_last : {false, true}) {
    Mlp mlp = fixed_mlp(9, {20, 12, 3, 1}, relu_last);
    mlp.prepare();
    for (std::size_t n : {1u, 2u, 7u, 8u, 9u, 17u}) {
      std::vector<float> x(n * 9);
      for (std::size_t k = 0; k < x.size(); ++k)
        x[k] = k % 5 == 0 ? 0.0f : static_cast<float>((k * 29) % 23) / 7.0f - 1.5f;
      std::vector<float> batched(n);
      mlp.forward_batch(x.data(), n, batched.data());
      for (std::size_t s = 0; s < n; ++s) {
        float one = 0.0f;
        mlp.forward(x.data() + s * 9, &one);
        EXPECT_EQ(one, batched[s]) << "sample " << s << " of " << n;  // exact, not approximately
      }
    }
  }
}

// A hierarchical comm model as trained ones are: 9 inputs, a wide hidden layer, two outputs, the
// backward seeing no start delays, inputs clamped to a range some features fall outside of.
NeuralCostModel hierarchical_model(bool backward_without_delays) {
  CommModelSpec comm;
  comm.form = CommForm::kHierarchical;
  comm.features.mean.assign(kHierCommFeatures, 0.2f);
  comm.features.std.assign(kHierCommFeatures, 1.5f);
  comm.input_min.assign(kHierCommFeatures, -3.0f);
  comm.input_max.assign(kHierCommFeatures, 2.0f);
  comm.net = fixed_mlp(kHierCommFeatures, {20, 2}, false);
  comm.net.layers[0].concave_begin = 4;  // some units min(x, 0), as MonotoneNet's
  comm.net.layers[0].concave_end = 9;
  comm.target_mean = {0.1f, -0.2f};
  comm.target_std = {0.5f, 0.7f};
  comm.fabric.devices_per_host = 4;
  comm.fabric.intra_bytes_per_ms = 2e6;
  comm.fabric.intra_peer_latency_ms = 0.5;
  comm.fabric.inter_bytes_per_ms = 1e6;
  comm.fabric.inter_peer_latency_ms = 0.8;
  comm.backward_without_delays = backward_without_delays;
  return NeuralCostModel("hierarchical", fixed_compute(), comm);
}

// The input all-to-all is the structure's estimate on the model's links, added to the forward; a model
// that knows no links (TorchRec's analytic estimate) charges none.
TEST(NeuralCostModel, TheInputAllToAllAddsTheStructuresTimeToTheForward) {
  NeuralCostModel model = hierarchical_model(true);
  const std::vector<int64_t> widths = {64, 128, 32, 16};
  const std::vector<double> compute = {1.0, 2.0, 0.5, 0.0};
  const std::vector<double> ids = {9.0, 30.0, 0.0, 2.5};
  std::vector<double> input, structure, fw, bw;
  model.predict_input_dist(ids, input);
  input_alltoall_ms(model.comm_spec().fabric, ids, structure);
  EXPECT_EQ(input, structure);
  EXPECT_GT(input[1], input[0]);
  model.predict_comm(widths, compute, fw, bw);
  const std::vector<DeviceCost> costs = costs_from_compute(model, compute, widths, ids, 0.25);
  for (std::size_t r = 0; r < costs.size(); ++r) {
    EXPECT_NEAR(costs[r].fw_comm_ms, fw[r] + input[r], 1e-12) << r;
    EXPECT_NEAR(costs[r].bw_comm_ms, bw[r] + 0.25, 1e-12) << r;
  }
  EXPECT_DOUBLE_EQ(max_total_from_compute(model, compute, widths, ids, 0.25), max_total_ms(costs));
  auto analytic = make_analytic_cost_model(AnalyticCostConfig{});
  analytic->predict_input_dist(ids, input);
  EXPECT_EQ(input, std::vector<double>(4, 0.0));
}

// A comm correction (calibrate --comm-ranks) moves each direction's transfer and keeps the forward's wait,
// on both comm forms; a model asked to plan for other links (structure only) does not carry it there.
TEST(NeuralCostModel, CommCorrectionAppliesToTheTransferOfTheHostItWasTimedOn) {
  CommCorrection correction;
  correction.fw_offset_ms = 0.4;
  correction.fw_scale = 0.5;
  correction.bw_offset_ms = -0.1;
  correction.bw_scale = 2.0;
  const std::vector<int64_t> widths = {64, 128, 32, 256};
  const std::vector<double> compute = {1.0, 4.0, 2.5, 7.0};
  for (bool hierarchical : {false, true}) {
    NeuralCostModel plain = hierarchical ? hierarchical_model(true) : fixed_model();
    CommModelSpec spec = plain.comm_spec();
    spec.correction = correction;
    NeuralCostModel corrected("corrected", fixed_compute(), spec);
    std::vector<double> fw, bw, cfw, cbw;
    plain.predict_comm(widths, compute, fw, bw);
    corrected.predict_comm(widths, compute, cfw, cbw);
    for (std::size_t r = 0; r < widths.size(); ++r) {
      const double wait = 7.0 - compute[r];
      EXPECT_NEAR(cfw[r], wait + corrected_transfer_ms(fw[r] - wait, 0.4, 0.5), 1e-9) << hierarchical << " rank " << r;
      EXPECT_NEAR(cbw[r], corrected_transfer_ms(bw[r], -0.1, 2.0), 1e-9) << hierarchical << " rank " << r;
      EXPECT_GE(cfw[r], wait);
    }
    if (!hierarchical) continue;
    // Planned for the links it was timed on, it keeps the correction; one device exchanges nothing.
    corrected.plan_for_hardware(spec.fabric);
    std::vector<double> same_fw, same_bw;
    corrected.predict_comm(widths, compute, same_fw, same_bw);
    EXPECT_EQ(same_fw, cfw);
    EXPECT_EQ(same_bw, cbw);
    corrected.predict_comm({64}, {1.0}, same_fw, same_bw);
    EXPECT_EQ(same_fw, std::vector<double>{0.0});
    EXPECT_EQ(same_bw, std::vector<double>{0.0});
    CommFabric elsewhere = spec.fabric;
    elsewhere.name = "other-links";
    plain.plan_for_hardware(elsewhere);
    corrected.plan_for_hardware(elsewhere);
    plain.predict_comm(widths, compute, fw, bw);
    corrected.predict_comm(widths, compute, cfw, cbw);
    EXPECT_EQ(cfw, fw);
    EXPECT_EQ(cbw, bw);
  }
}

TEST(NeuralCostModel, HierarchicalCommEqualsItsNetOnEachPassBitForBit) {
  // The backward's rows share the forward's first inputs, so the prediction computes their part once;
  // here each pass goes through the whole net, as the model is defined.
  for (bool backward_without_delays : {true, false}) {
    NeuralCostModel model = hierarchical_model(backward_without_delays);
    const CommModelSpec& spec = model.comm_spec();
    Mlp net = spec.net;
    net.prepare();
    for (const auto& [widths, compute] : std::vector<std::pair<std::vector<int64_t>, std::vector<double>>>{
             {{64, 128, 32, 0, 256, 8}, {1.0, 4.0, 2.5, 0.0, 7.0, 0.5}},
             {{512, 4, 4, 4}, {3.0, 3.0, 3.0, 3.0}},
             {{100, 260, 36, 12, 48, 64, 300, 20, 8}, {9.0, 1.0, 2.0, 6.0, 0.1, 3.0, 5.0, 2.0, 4.0}}}) {
      std::vector<HierCommFeatureVector> rows;
      std::vector<double> structure;
      hierarchical_comm_features_into(spec.fabric, widths, compute, rows, structure);
      auto normalised = [&](HierCommFeatureVector f) {
        for (std::size_t k = 0; k < f.size(); ++k) {
          f[k] = (std::min(std::max(f[k], spec.input_min[k]), spec.input_max[k]) - spec.features.mean[k]) /
                 spec.features.std[k];
        }
        return f;
      };
      const double latest = *std::max_element(compute.begin(), compute.end());
      std::vector<double> fw, bw;
      model.predict_comm(widths, compute, fw, bw);
      for (std::size_t r = 0; r < widths.size(); ++r) {
        float out[2];
        const HierCommFeatureVector forward_row = normalised(rows[r]);
        net.forward(forward_row.data(), out);
        const double expected_fw =
            (latest - compute[r]) +
            structure[r] * std::exp(static_cast<double>(out[0] * spec.target_std[0] + spec.target_mean[0]));
        HierCommFeatureVector backward_row = rows[r];
        if (backward_without_delays) clear_start_delays(backward_row);
        backward_row = normalised(backward_row);
        net.forward(backward_row.data(), out);
        const double expected_bw =
            structure[r] * std::exp(static_cast<double>(out[1] * spec.target_std[1] + spec.target_mean[1]));
        EXPECT_EQ(fw[r], expected_fw) << "device " << r << " of " << widths.size();
        EXPECT_EQ(bw[r], expected_bw) << "device " << r << " of " << widths.size();
      }
      if (backward_without_delays) {
        std::vector<double> fw_even, bw_even;  // start delays change the forward only
        model.predict_comm(widths, std::vector<double>(widths.size(), 1.0), fw_even, bw_even);
        EXPECT_EQ(bw_even, bw);
      }
    }
  }
}

TEST(NeuralCostModel, ComputeEqualsItsHead) {
  // compute_from_summary sums the head's last layer in eight lanes (a width that is no multiple of 8
  // leaves a tail) and takes tanh from exp; here the head runs as the plain Mlp it is, over summaries
  // whose hidden units are active in varied patterns. The same up to float rounding (the lanes add in
  // another order).
  const std::vector<std::vector<ShardFeatures>> sets = {
      {shard(1000, 16, 2)},
      {shard(1000, 16, 2), shard(5'000'000, 128, 30), shard(70, 4, 0.5)},
      std::vector<ShardFeatures>(40, shard(20000, 64, 8)),
      {shard(3, 4, 0.01), shard(90'000'000, 256, 200)}};
  for (int width : {8, 13, 64}) {
    ComputeModelSpec compute = fixed_compute();
    compute.head = fixed_mlp(9, {width, 1}, false);
    const NeuralCostModel model("fixed", compute, CommModelSpec{});
    const DenseLayer& first = compute.head.layers[0];
    Mlp rest;
    rest.layers = {compute.head.layers[1]};
    int active_patterns = 0;
    for (const auto& set : sets) {
      std::vector<float> sum(static_cast<std::size_t>(model.summary_size()), 0.0f);
      std::vector<float> one(sum.size());
      for (const auto& s : set) {
        model.shard_summary(s, one.data());
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += one[i];
      }
      const float count = sum[1];
      std::vector<float> hidden(static_cast<std::size_t>(width));
      int active = 0;
      for (std::size_t o = 0; o < hidden.size(); ++o) {
        // The summary holds the first layer's embedding columns applied (summed); its last column is log count's.
        const float count_weight = first.weight[o * 9 + 8];
        const float pre = sum[2 + o] / count + count_weight * std::log(count) + first.bias[o];
        hidden[o] = std::max(pre, 0.0f);
        active += hidden[o] != 0.0f;
      }
      active_patterns += active > 0 && active < width;
      float logit = 0.0f;
      rest.forward(hidden.data(), &logit);
      const double expected = static_cast<double>(sum[0]) * std::exp(1.0 * std::tanh(static_cast<double>(logit)));
      EXPECT_NEAR(model.compute_from_summary(sum.data()), expected, 1e-6 * expected)
          << set.size() << " shards, " << width << " hidden units";
    }
    EXPECT_GT(active_patterns, 0) << width;  // some sets leave some units inactive
  }
}

TEST(NeuralCostModel, OneDeviceHasNoCommunication) {
  std::vector<double> fw, bw;
  fixed_model().predict_comm({128}, {1.0}, fw, bw);
  EXPECT_EQ(fw, std::vector<double>{0.0});
  EXPECT_EQ(bw, std::vector<double>{0.0});
}

TEST(AnalyticCostModel, IsMonotoneInLookupsWidthAndShards) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  auto c = model->predict_compute(
      {{shard(1000, 64, 2)}, {shard(1000, 64, 4)}, {shard(1000, 128, 2)}, {shard(1000, 64, 2), shard(10, 4, 1)}});
  EXPECT_LT(c[0], c[1]);
  EXPECT_LT(c[0], c[2]);
  EXPECT_LT(c[0], c[3]);
  std::vector<double> fw, bw;
  model->predict_comm({64, 128}, {1.0, 1.0}, fw, bw);
  EXPECT_LT(fw[0], fw[1]);
  EXPECT_EQ(fw, bw);
}

TEST(ScorePlan, ScoresEveryDeviceOfAPlan) {
  auto tables = testing::varied_tables(20);
  Cluster cluster;
  cluster.num_devices = 4;
  Plan plan = make_planner("dim_greedy", testing::planner_config())->plan(tables, cluster);
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  auto costs = score_plan(plan, tables, *model);
  ASSERT_EQ(costs.size(), 4u);
  auto usage = device_usage(plan);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_GT(costs[r].compute_ms, 0.0);
    std::vector<double> fw, bw;
    model->predict_comm({usage[0].dim_sum, usage[1].dim_sum, usage[2].dim_sum, usage[3].dim_sum}, {0, 0, 0, 0}, fw, bw);
    EXPECT_DOUBLE_EQ(costs[r].fw_comm_ms, fw[r]);
  }
}

TEST(CostFeatures, CommFeaturesDescribeOwnWidthAndWait) {
  auto f = comm_features({100, 300}, {2.0, 0.0});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FLOAT_EQ(f[1][0], std::log1p(300.0f));  // own width
  EXPECT_FLOAT_EQ(f[1][1], std::log1p(200.0f));  // mean width
  EXPECT_FLOAT_EQ(f[1][4], 1.0f);                // the widest device
  EXPECT_FLOAT_EQ(f[1][5], std::log(2.0f));      // world size
  EXPECT_FLOAT_EQ(f[1][6], std::log1p(2.0f));    // waits 2 ms for the latest device
  EXPECT_FLOAT_EQ(f[0][6], 0.0f);
  EXPECT_EQ(comm_waits({2.0, 0.0}), (std::vector<double>{0.0, 2.0}));
}

TEST(ModelLocation, BareNamesFindBundledModelsAndEverythingElsePassesThrough) {
  namespace fs = std::filesystem;
  const std::string h100 = resolve_model_dir("h100");
  EXPECT_TRUE(fs::exists(fs::path(h100) / "meta.json")) << h100;
  EXPECT_EQ(fs::path(h100).filename(), "h100");
  EXPECT_EQ(fs::path(resolve_model_dir("cpu-2core")).filename(), "cpu-2core");
  EXPECT_EQ(resolve_model_dir("default"), resolve_model_dir("cpu-2core"));  // the CPU model's former name
  EXPECT_EQ(find_bundled_model_dir("no-such-model"), "");
  EXPECT_EQ(resolve_model_dir("no-such-model"), "no-such-model");  // the loader names it in its error
  EXPECT_EQ(resolve_model_dir("models/h100"), "models/h100");      // a path is the user's, as given
  EXPECT_EQ(resolve_model_dir(""), "");
  // A directory here of a bundled model's name is the user's, not the bundled one.
  const fs::path here = fs::temp_directory_path() / "shardplan-model-location";
  fs::create_directories(here / "h100");
  const fs::path before = fs::current_path();
  fs::current_path(here);
  EXPECT_EQ(resolve_model_dir("h100"), "h100");
  fs::current_path(before);
  fs::remove_all(here);
}

}  // namespace
}  // namespace shardplan
