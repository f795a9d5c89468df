#pragma once
// Small, deterministic table sets for planner and validator tests.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan::testing {

// `devices` GPUs of `memory` bytes each, default host layout and optimizer.
inline Cluster cluster_of(int devices, int64_t memory) {
  Cluster c;
  c.num_devices = devices;
  c.memory_per_device_bytes = memory;
  return c;
}

inline Table make_table(std::string name, int64_t rows, int dim, double pooling_factor = 1.0) {
  Table t;
  t.name = std::move(name);
  t.rows = rows;
  t.dim = dim;
  t.pooling_factor = pooling_factor;
  return t;
}

// `count` tables with varied sizes, widths and pooling factors (a linear congruential walk).
inline std::vector<Table> varied_tables(int count) {
  std::vector<Table> tables;
  uint64_t state = 12345;
  auto next = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int i = 0; i < count; ++i) {
    int64_t rows = 100 + static_cast<int64_t>(next() % 2'000'000);
    int dim = 4 * static_cast<int>(1 + next() % 32);
    double pf = 1.0 + static_cast<double>(next() % 400) / 10.0;
    tables.push_back(make_table("t" + std::to_string(i), rows, dim, pf));
  }
  return tables;
}

// TorchRec's analytic estimate: the cost model unit tests use, since they load no model files.
inline std::shared_ptr<const CostModel> analytic_model() { return make_analytic_cost_model(AnalyticCostConfig{}); }

// A model that asks `base` everything: tests derive from it to charge one thing differently.
class ForwardingModel : public CostModel {
 public:
  explicit ForwardingModel(std::shared_ptr<const CostModel> base) : base_(std::move(base)) {}
  int summary_size() const override { return base_->summary_size(); }
  void shard_summary(const ShardFeatures& shard, float* summary) const override {
    base_->shard_summary(shard, summary);
  }
  double compute_from_summary(const float* sum) const override { return base_->compute_from_summary(sum); }
  void predict_comm(const std::vector<int64_t>& dim_sums, const std::vector<double>& compute_ms,
                    std::vector<double>& fw, std::vector<double>& bw) const override {
    base_->predict_comm(dim_sums, compute_ms, fw, bw);
  }
  void predict_input_dist(const std::vector<double>& ids, std::vector<double>& ms) const override {
    base_->predict_input_dist(ids, ms);
  }
  double alltoall_group_ms(int num_devices) const override { return base_->alltoall_group_ms(num_devices); }
  double allreduce_ms(double bytes, int num_devices) const override { return base_->allreduce_ms(bytes, num_devices); }
  double rowwise_collectives_ms(int64_t rw_dim, int num_devices) const override {
    return base_->rowwise_collectives_ms(rw_dim, num_devices);
  }

 private:
  std::shared_ptr<const CostModel> base_;
};

// `base`, with every sharding type with all-to-alls past a plan's first costing `group_ms` more
// (CostModel::alltoall_group_ms; the analytic model charges none).
class GroupChargedModel final : public ForwardingModel {
 public:
  GroupChargedModel(std::shared_ptr<const CostModel> base, double group_ms)
      : ForwardingModel(std::move(base)), group_ms_(group_ms) {}
  std::string name() const override { return "group-charged"; }
  double alltoall_group_ms(int /*num_devices*/) const override { return group_ms_; }

 private:
  double group_ms_;
};

// A planner configuration with every planner's needs met: the analytic model stands in for the
// pre-trained one, which unit tests do not load.
inline PlannerConfig planner_config(uint64_t seed = 0) {
  PlannerConfig config;
  config.seed = seed;
  config.cost_model = make_analytic_cost_model(AnalyticCostConfig{});
  return config;
}

}  // namespace shardplan::testing
