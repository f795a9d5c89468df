#pragma once
// Small, deterministic table sets for planner and validator tests.
#include <string>
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

// A planner configuration with every planner's needs met: the analytic model stands in for the
// pre-trained one, which unit tests do not load.
inline PlannerConfig planner_config(uint64_t seed = 0) {
  PlannerConfig config;
  config.seed = seed;
  config.cost_model = make_analytic_cost_model(AnalyticCostConfig{});
  return config;
}

}  // namespace shardplan::testing
