// The all-to-all correction calibrate --comm-ranks fits: recovered on a host whose truth is known, the
// forward's wait kept out of it, its floor, and its meta.json form.
#include <gtest/gtest.h>

#include <algorithm>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/comm_correction.hpp"

namespace shardplan {
namespace {

// A model whose transfer grows with the width, and whose forward waits for the latest device, as the
// neural models' do.
class LinearCommModel final : public CostModel {
 public:
  std::string name() const override { return "linear-comm"; }
  int summary_size() const override { return 1; }
  void shard_summary(const ShardFeatures& /*shard*/, float* summary) const override { summary[0] = 1.0f; }
  double compute_from_summary(const float* summary_sum) const override { return summary_sum[0]; }
  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override {
    const double latest = *std::max_element(compute_ms.begin(), compute_ms.end());
    fw_ms.assign(dim_sums.size(), 0.0);
    bw_ms.assign(dim_sums.size(), 0.0);
    for (std::size_t r = 0; r < dim_sums.size(); ++r) {
      fw_ms[r] = (latest - compute_ms[r]) + 0.2 + 0.01 * static_cast<double>(dim_sums[r]);
      bw_ms[r] = 0.1 + 0.02 * static_cast<double>(dim_sums[r]);
    }
  }
};

// Plans timed on a host whose transfers are offset + scale x the model's, the forward waiting as long.
std::vector<CommObservation> timed_on_host(const CostModel& model, double fw_offset, double fw_scale, double bw_offset,
                                           double bw_scale) {
  std::vector<CommObservation> out;
  for (int k = 0; k < 12; ++k) {
    CommObservation o;
    for (int r = 0; r < 4; ++r) {
      o.dim_sums.push_back(16 + ((k * 7 + r * 13) % 9) * 40);
      o.compute_ms.push_back(1.0 + ((k + 3 * r) % 5) * 0.7);
    }
    std::vector<double> fw, bw;
    model.predict_comm(o.dim_sums, o.compute_ms, fw, bw);
    const double latest = *std::max_element(o.compute_ms.begin(), o.compute_ms.end());
    for (std::size_t r = 0; r < fw.size(); ++r) {
      const double wait = latest - o.compute_ms[r];
      o.fw_ms.push_back(wait + fw_offset + fw_scale * (fw[r] - wait));
      o.bw_ms.push_back(bw_offset + bw_scale * bw[r]);
    }
    out.push_back(std::move(o));
  }
  return out;
}

// A host whose backward takes `bw_ms` whatever the width, its forward as the model says.
std::vector<CommObservation> width_blind_backward(const CostModel& model, double bw_ms) {
  auto timed = timed_on_host(model, 0.0, 1.0, 0.0, 1.0);
  for (auto& o : timed) std::fill(o.bw_ms.begin(), o.bw_ms.end(), bw_ms);
  return timed;
}

TEST(CommCorrection, FitRecoversTheHostsOffsetAndScalePerDirection) {
  LinearCommModel model;
  const auto timed = timed_on_host(model, -0.1, 0.8, 0.5, 1.5);
  const CommCorrection c = fit_comm_correction(model, timed);
  EXPECT_NEAR(c.fw_offset_ms, -0.1, 1e-9);
  EXPECT_NEAR(c.fw_scale, 0.8, 1e-9);
  EXPECT_NEAR(c.bw_offset_ms, 0.5, 1e-9);
  EXPECT_NEAR(c.bw_scale, 1.5, 1e-9);
  const CommErrors before = comm_errors(model, CommCorrection{}, timed);
  const CommErrors after = comm_errors(model, c, timed);
  EXPECT_EQ(after.devices, 48);
  EXPECT_GT(before.bw_mape_percent, 20.0);
  EXPECT_LT(after.fw_mape_percent, 1e-6);
  EXPECT_LT(after.bw_mape_percent, 1e-6);
  EXPECT_LT(after.total_mape_percent, 1e-6);
}

TEST(CommCorrection, AWidthBlindHostFallsBackToAScaleThroughTheOrigin) {
  // Every timed transfer the same whatever the model says: an affine slope of 0 would make width free.
  LinearCommModel model;
  const CommCorrection c = fit_comm_correction(model, width_blind_backward(model, 2.0));
  EXPECT_EQ(c.bw_offset_ms, 0.0);
  EXPECT_GT(c.bw_scale, 0.05);
}

TEST(CommCorrection, AHostFarFasterThanTheModelStillGetsAModelFileCanLoad) {
  // Every timed transfer a constant 0.001 ms: the slope through the origin falls below what meta.json
  // accepts, so the fit holds it there and the written model loads again.
  LinearCommModel model;
  const CommCorrection c = fit_comm_correction(model, width_blind_backward(model, 0.001));
  EXPECT_DOUBLE_EQ(c.bw_scale, 0.05);
  EXPECT_NO_THROW(comm_correction_from_json(comm_correction_to_json(c), "meta.json", "comm.correction"));
}

TEST(CommCorrection, OneDeviceIsLeftAlone) {
  CommCorrection c;
  c.fw_offset_ms = 0.3;
  c.bw_offset_ms = 0.2;
  std::vector<double> compute = {1.0};
  std::vector<double> fw = {0.0};
  std::vector<double> bw = {0.0};
  apply_comm_correction(c, compute, fw, bw);
  EXPECT_EQ(fw[0], 0.0);
  EXPECT_EQ(bw[0], 0.0);
}

TEST(CommCorrection, KeepsTheWaitAndNeverMakesATransferFree) {
  CommCorrection c;
  c.fw_offset_ms = -5.0;
  c.fw_scale = 1.0;
  c.bw_offset_ms = -5.0;
  c.bw_scale = 1.0;
  std::vector<double> compute = {1.0, 3.0};
  std::vector<double> fw = {2.0 + 2.0, 2.0};  // rank 0 waits 2 ms, then transfers 2 ms
  std::vector<double> bw = {2.0, 8.0};
  apply_comm_correction(c, compute, fw, bw);
  EXPECT_DOUBLE_EQ(fw[0], 2.0 + kCommCorrectionFloor * 2.0);
  EXPECT_DOUBLE_EQ(fw[1], kCommCorrectionFloor * 2.0);
  EXPECT_DOUBLE_EQ(bw[0], kCommCorrectionFloor * 2.0);
  EXPECT_DOUBLE_EQ(bw[1], 3.0);
}

TEST(CommCorrection, MetaJsonRoundTripsAndNamesABadField) {
  CommCorrection c;
  c.fw_offset_ms = -0.25;
  c.fw_scale = 0.9;
  c.bw_offset_ms = 0.125;
  c.bw_scale = 1.1;
  const CommCorrection back = comm_correction_from_json(comm_correction_to_json(c), "meta.json", "comm.correction");
  EXPECT_EQ(back.fw_offset_ms, c.fw_offset_ms);
  EXPECT_EQ(back.fw_scale, c.fw_scale);
  EXPECT_EQ(back.bw_offset_ms, c.bw_offset_ms);
  EXPECT_EQ(back.bw_scale, c.bw_scale);
  nlohmann::json bad = comm_correction_to_json(c);
  bad["bw_scale"] = -1.0;
  try {
    comm_correction_from_json(bad, "meta.json", "comm.correction");
    FAIL() << "a negative scale was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("comm.correction.bw_scale"), std::string::npos) << e.what();
  }
  bad.erase("bw_scale");
  EXPECT_THROW(comm_correction_from_json(bad, "meta.json", "comm.correction"), InputError);
}

}  // namespace
}  // namespace shardplan
