#pragma once
// The pre-trained neural cost model evaluated in plain C++: its weights come from a model directory
// (read with LibTorch by load_cost_model in torch/model_files.hpp), but inference needs no LibTorch, so the
// search scores thousands of shard sets a second without tensor overheads.
#include <memory>
#include <string>
#include <vector>

#include "shardplan/cost_model/allreduce_fit.hpp"
#include "shardplan/cost_model/comm_correction.hpp"
#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/cost_model/rowwise_fit.hpp"

namespace shardplan {

// Scale-free comm models recorded no batch; they were trained on the shipped data's.
inline constexpr int64_t kScaleFreeCommBatch = 2048;

// Widest layer the evaluator handles (it works in fixed buffers); model files with wider layers are refused.
inline constexpr int kMaxLayerWidth = 512;

// A fully connected layer: y = W x + b, W stored row-major [out][in].
struct DenseLayer {
  int inputs = 0;
  int outputs = 0;
  std::vector<float> weight;
  std::vector<float> bias;
  // The weight transposed to [in][out], filled by Mlp::prepare: the forward pass then runs over
  // contiguous outputs (vectorised) with each output summed in the same order as before.
  std::vector<float> weight_by_input;
  // Outputs in [concave_begin, concave_end) are activated by min(x, 0) instead of ReLU's max(x, 0):
  // both are non-decreasing, and a monotone network needs concave pieces beside the convex ones to
  // bend both ways.
  int concave_begin = 0;
  int concave_end = 0;
};

// Dense layers with ReLU between them (and after the last one when relu_last).
struct Mlp {
  std::vector<DenseLayer> layers;
  bool relu_last = false;
  int inputs() const { return layers.empty() ? 0 : layers.front().inputs; }
  int outputs() const { return layers.empty() ? 0 : layers.back().outputs; }
  // Builds each layer's weight_by_input; forward works without it, only slower.
  void prepare();
  // `x` has inputs() values, `y` receives outputs() values.
  void forward(const float* x, float* y) const;
  // forward() for n inputs at once (x: n x inputs(), y: n x outputs()), each result equal to forward()'s
  // bit for bit: a narrow layer's dot products are sequential chains of additions, and several samples'
  // chains run side by side instead of one after another.
  void forward_batch(const float* x, std::size_t n, float* y) const;
};

// Standardisation of inputs and targets with the training set's statistics.
struct Normaliser {
  std::vector<float> mean;
  std::vector<float> std;
};

// Compute: each shard's features go through a shared network to an embedding h; a linear layer turns h
// into the log latency of the shard alone; a device's latency is the sum of its shards' alone latencies
// times an interaction factor exp(range x tanh(head(mean h, log shard count))) for what fused kernels
// share or contend for. Additive at its core, the model extrapolates to devices holding more shards
// than any measured sample instead of exploding, and the factor stays within [1/e^range, e^range].
struct ComputeModelSpec {
  Normaliser features;  // kComputeFeatures
  Mlp shard_net;        // features -> embedding h (ReLU last)
  Mlp alone;            // h -> log ms of the shard alone (one linear layer)
  Mlp head;             // [context embedding, log count] -> interaction logit
  float interaction_range = 1.0f;
  float step_cost_ms = 0.0f;  // added once per non-empty device
  // The head's context: the shards' latency-weighted mean embedding (else the plain mean, as models of
  // format shard-plan-model/2 without "context" were trained).
  bool latency_weighted_context = false;
};

// Communication, per device: forward = its wait for the latest device to start + a transfer time,
// backward = a transfer time. Two forms:
// - scale-free (models before the hierarchical structure): the network predicts both transfers'
//   standardised log ms from the scale-free features (kCommFeatures);
// - hierarchical: the structure of comm_structure.hpp on the measured hardware's figures gives each
//   device's transfer time T; the network learns the log of measured over structural time from the
//   structural times (non-decreasing in them: positive weights on their paths, MonotoneNet) and the
//   context (kHierCommFeatures), so a transfer is T x exp(correction) and more bytes never cost less.
//   Inputs are clamped to the training range: outside the measured world sizes and volumes the
//   correction holds still and the estimate scales as the structure does.
enum class CommForm { kScaleFree, kHierarchical };

struct CommModelSpec {
  CommForm form = CommForm::kScaleFree;
  Normaliser features;
  Mlp net;
  std::array<float, 2> target_mean{};
  std::array<float, 2> target_std{1.0f, 1.0f};
  CommFabric fabric;                        // hierarchical: the figures of the hardware measured
  std::vector<float> input_min, input_max;  // hierarchical: the training range of each input
  AllreduceFit allreduce;                   // hierarchical: the measured all-reduce (empty: the structure)
  RowwiseFit rowwise;                       // hierarchical: the measured row-wise collectives (empty: latency only)
  // hierarchical: the backward's correction sees no start delays (they are the forward's: the backward
  // starts together, after the dense layers); models trained before it saw the forward's delays.
  bool backward_without_delays = false;
  // hierarchical: `net` was trained on other hardware than `fabric` describes (a GPU's compute-only
  // model keeps a CPU-measured comm net), so the all-to-all is the structure's estimate on `fabric` alone.
  bool structure_only = false;
  // This host's timings of the all-to-all (calibrate --comm-ranks), applied to the net's prediction unless
  // the model plans for other links (structure_only, or a profile other than `fabric`).
  CommCorrection correction;
};

// Whether an Mlp is non-decreasing in input `input`: that input's first-layer weights are non-negative,
// and so are the later weights on every path from it (with two layers, the output weights of the hidden
// units that see it; deeper, every later weight). Both activations, ReLU and min(x, 0), keep the order.
bool mlp_non_decreasing_in(const Mlp& mlp, int input);

class NeuralCostModel final : public CostModel {
 public:
  NeuralCostModel(std::string name, ComputeModelSpec compute, CommModelSpec comm);
  std::string name() const override { return name_; }
  ModelHardware hardware() const override { return hardware_; }
  void set_hardware(ModelHardware hardware) { hardware_ = std::move(hardware); }
  // Summary: [alone latency, 1, w A h] with A the head's first layer over the context embedding and w the
  // alone latency (latency-weighted context) or 1. A is linear, so the weighted mean of A h is A applied
  // to the weighted mean of h: a device's cost then needs no matrix product, only the head's remaining
  // layers, which makes the search's incremental updates cheap.
  int summary_size() const override { return 2 + projected_width(); }
  void shard_summary(const ShardFeatures& shard, float* summary) const override;
  double compute_from_summary(const float* summary_sum) const override;
  // The latency and, with a latency-weighted context, the weighted embedding scale; the count does not.
  void scale_shard_summary(float* summary, double factor) const override;
  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                    std::vector<double>& fw_ms, std::vector<double>& bw_ms) const override;
  // On the links it plans for: the profile's, or the hierarchical model's own with its measured fit
  // (scale-free models: the default).
  double allreduce_ms(double bytes, int num_devices) const override;
  // The structure's estimate on the links it plans for (scale-free models: TorchRec's nominal links).
  // Nothing measured corrects it: the collectors time the output all-to-all.
  void predict_input_dist(const std::vector<double>& ids_per_sample, std::vector<double>& ms) const override;
  // kCollectivesPerGroup zero-payload all-to-alls on the links the input all-to-all is priced on.
  double alltoall_group_ms(int num_devices) const override;
  // The measured fit on the model's own links (across hosts, at least the default latency); elsewhere (or
  // unmeasured) the default latency.
  double rowwise_collectives_ms(int64_t rw_dim, int num_devices) const override;

  // Plans for the hardware `fabric` describes (a --hardware profile): a hierarchical model measured on
  // that profile keeps its learned correction; any other hardware gets the structure's estimate on the
  // profile's figures alone (a correction learned on one machine says nothing of another's links). The
  // batch is the model's.
  void plan_for_hardware(CommFabric fabric);
  // The cluster's GPUs per host, for the structure of whichever hardware it plans for.
  void set_devices_per_host(int devices_per_host);
  const CommModelSpec& comm_spec() const { return comm_; }
  bool comm_structure_only() const { return structure_only_; }

 private:
  void predict_comm_scale_free(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                               std::vector<double>& fw_ms, std::vector<double>& bw_ms) const;
  void predict_comm_hierarchical(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                                 std::vector<double>& fw_ms, std::vector<double>& bw_ms) const;

  int projected_width() const { return compute_.head.layers.front().outputs; }

  std::string name_;
  ComputeModelSpec compute_;
  Mlp head_rest_;                    // the head after its first layer
  std::vector<float> count_weight_;  // the first layer's column for log count
  std::vector<float> projection_;    // the first layer's columns for the mean embedding, [out][in]
  std::vector<float> log_counts_;    // std::log(n) for the shard counts n a device usually holds
  CommModelSpec comm_;
  bool structure_only_ = false;  // plan_for_hardware chose hardware other than the measured one
  CommFabric planning_fabric_;   // the structure's figures when structure_only_
  ModelHardware hardware_;
};

}  // namespace shardplan
