#pragma once
// What the planner asks of a cost model: the compute latency of a device's shard set (not additive over
// shards: fused kernels share launches and caches), and each device's all-to-all latency given every
// device's output width and compute time. Implementations: the pre-trained neural model (load_cost_model
// in torch/model_files.hpp) and TorchRec's analytic estimate. No LibTorch types here.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardplan/core/comm_fabric.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/plan.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // The hardware the model's costs were measured on (empty fields: unknown).
  virtual ModelHardware hardware() const { return {}; }

  // Compute latency is g(sum over the set's shards of a per-shard summary vector): the sum-over-shards
  // form of the method's compute model (the analytic model is the one-wide case with g the identity).
  // A search keeps each device's summary sum, so adding a shard costs one g, not a re-scored set.
  virtual int summary_size() const = 0;
  virtual void shard_summary(const ShardFeatures& shard, float* summary) const = 0;
  virtual double compute_from_summary(const float* summary_sum) const = 0;
  // Makes a shard's summary that of a shard `factor` times slower alone (summary[0] is always the shard's
  // latency alone); a measured correction (cost_correction.hpp) applies it.
  virtual void scale_shard_summary(float* summary, double factor) const {
    for (int i = 0; i < summary_size(); ++i) summary[i] = static_cast<float>(summary[i] * factor);
  }

  // Compute latency in ms of each shard set (one device's shards each), batched. An empty set costs 0.
  virtual std::vector<double> predict_compute(const std::vector<std::vector<ShardFeatures>>& sets) const;

  // Per-device forward and backward all-to-all latency in ms, given each device's output width (sum of
  // its shards' columns) and predicted compute (a device that finishes early waits in the forward
  // collective).
  virtual void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                            std::vector<double>& fw_ms, std::vector<double>& bw_ms) const = 0;

  // Per-device input all-to-all latency in ms (TorchRec's KJT dist of the ids before the lookups), given
  // each device's ids per sample (DeviceShards::input_ids). By default none: a model that knows no links
  // (TorchRec's analytic estimate) charges none. Added to the forward.
  virtual void predict_input_dist(const std::vector<double>& ids_per_sample, std::vector<double>& ms) const {
    ms.assign(ids_per_sample.size(), 0.0);
  }

  // What each sharding type with all-to-alls past a plan's first adds to every device's step, in ms, on
  // `num_devices` GPUs. TorchRec distributes each sharding type's inputs and outputs on its own: the ids'
  // split sizes, lengths and values, the pooled outputs and, in backward, their gradients, each an
  // all-to-all (kCollectivesPerGroup) whose latency the widths' all-to-alls price only once. On 4 Gloo
  // ranks of a 2-core VM one small column-wise table beside table-wise ones added 8 ms to a 57 ms step
  // (data/measured/cpu-2core/alltoall-groups). By default none: a model that knows no links.
  virtual double alltoall_group_ms(int /*num_devices*/) const { return 0.0; }
  static constexpr int kCollectivesPerGroup = 5;

  // The all-reduce of data-parallel tables' gradients (`bytes` in all) over `num_devices` GPUs, in ms: a
  // ring on the links the model plans for (comm_structure.hpp). By default TorchRec's nominal GPU links,
  // for models that know no links of their own. Nothing measured: the collectors measure all-to-alls.
  virtual double allreduce_ms(double bytes, int num_devices) const;

  // What a plan's row-wise tables' reduce-scatter and all-gather add to every GPU beyond their width in
  // the all-to-all, for `rw_dim` summed row-wise width on `num_devices` >= 2 GPUs. By default their
  // latency alone: two collectives of W - 1 ring steps, as an all-reduce of almost nothing.
  virtual double rowwise_collectives_ms(int64_t rw_dim, int num_devices) const;
  // The all-reduce whose time stands for that latency.
  static constexpr double kLatencyProbeBytes = 4.0;

 protected:
  // The ring on TorchRec's nominal GPU links with this many GPUs per host.
  static double nominal_allreduce_ms(double bytes, int num_devices, int devices_per_host);
  // TorchRec's nominal GPU links with this many GPUs per host.
  static CommFabric nominal_fabric(int devices_per_host);
};

// The features of a shard: `cols` columns of `table` (all rows).
ShardFeatures shard_features(const Table& table, int64_t cols);

// The compute sets of a plan's devices (device_shards' pieces as the model's features).
std::vector<std::vector<ShardFeatures>> compute_sets(const std::vector<DeviceShards>& devices);

// Per-device costs from each device's predicted compute, output width and input ids per sample: adds the
// model's all-to-alls (the input's to the forward), and to the backward the other collectives
// (collectives_ms, the same on every device: extra_collectives_ms), and each device's cached pieces' misses
// (cache_ms, uvm_cache_cost.hpp; none when null).
std::vector<DeviceCost> costs_from_compute(const CostModel& model, const std::vector<double>& compute_ms,
                                           const std::vector<int64_t>& dim_sums, const std::vector<double>& input_ids,
                                           double collectives_ms = 0.0, const std::vector<double>* cache_ms = nullptr);
// max_total_ms(costs_from_compute(...)), the same value, without allocating: what a search asks of
// every candidate change.
double max_total_from_compute(const CostModel& model, const std::vector<double>& compute_ms,
                              const std::vector<int64_t>& dim_sums, const std::vector<double>& input_ids,
                              double collectives_ms = 0.0, const std::vector<double>* cache_ms = nullptr);

// What every device of a plan spends on collectives besides the all-to-all: the all-reduce of its
// data-parallel tables' gradients (`allreduce_bytes`, 0 without any) and, when it has row-wise tables
// (`row_wise_dim`, their summed width; 0 without any), what their reduce-scatter and all-gather add
// beyond that width in the all-to-all (CostModel::rowwise_collectives_ms). Table-row-wise tables run the
// same two collectives within their host (`host_row_wise_dim`: the largest summed width of one host's,
// on `devices_per_host` GPUs); TorchRec runs them on every host, and the all-to-all after waits for all.
double extra_collectives_ms(const CostModel& model, int64_t allreduce_bytes, int64_t row_wise_dim, int num_devices,
                            int64_t host_row_wise_dim = 0, int devices_per_host = 0);
// What the sharding types with all-to-alls past the first add (CostModel::alltoall_group_ms each), for a
// plan with `groups` of them (DeviceShards::alltoall_groups).
double alltoall_groups_ms(const CostModel& model, int groups, int num_devices);
// All of the above for a plan's devices (device_shards).
double plan_collectives_ms(const CostModel& model, const std::vector<DeviceShards>& devices);

// Every device's cost given its compute (`compute_ms`, one per device of `devices`, the plan's): the
// costs_from_compute of their widths, input ids, the plan's other collectives and its cached tables' misses.
std::vector<DeviceCost> plan_costs_from_compute(const CostModel& model, const Plan& plan,
                                                const std::vector<DeviceShards>& devices,
                                                const std::vector<double>& compute_ms);

// Scores a plan: per-device compute, forward and backward communication. A table the model gives no
// finite cost throws InputError naming it (refuse_unscorable), so no report ever shows NaN.
std::vector<DeviceCost> score_plan(const Plan& plan, const std::vector<Table>& tables, const CostModel& model);

// A model asked about shapes far past those it was trained on can overflow (the bundled one does from
// about 39,000 columns): where its prediction for `piece` (`cols` columns of `table`) is not a finite,
// non-negative number, throws InputError naming the table, its shape and the model. `compute_ms` is
// that prediction; nothing happens when it is fine.
void refuse_unscorable(const CostModel& model, const Table& table, int64_t cols, double compute_ms);

// TorchRec's analytic estimate (torchrec-baseline.md) for `batch_size` samples in all (TorchRec's B x W).
struct AnalyticCostConfig {
  int64_t batch_size = 2048;
  int devices_per_host = 8;
  double hbm_bandwidth_bytes_per_ms = 897.0 * (1ll << 30) / 1000.0;  // fused kernel, 897 GiB/s
  double intra_host_bytes_per_ms = 600.0 * (1ll << 30) / 1000.0;
  double inter_host_bytes_per_ms = 12.5 * (1ll << 30) / 1000.0;
};
std::unique_ptr<CostModel> make_analytic_cost_model(const AnalyticCostConfig& config);

// TorchRec's per-shard estimate for a table-wise or column-wise shard on `world_size` ranks: forward and
// backward compute plus forward and backward output transfers. Its planner adds these up per rank.
struct AnalyticShardCost {
  double compute_ms = 0.0;
  double comm_ms = 0.0;  // forward and backward together
  double total_ms() const { return compute_ms + comm_ms; }
};
AnalyticShardCost analytic_shard_cost(const ShardFeatures& shard, int world_size, const AnalyticCostConfig& config);

}  // namespace shardplan
