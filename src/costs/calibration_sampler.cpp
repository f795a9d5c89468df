#include "shardplan/costs/calibration_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/costs/compute_collector.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan {

namespace {

constexpr int kWidthStep = 4;
constexpr int kMaxWidth = 128;
// Independent streams of the seed: which sets come from plans, their tasks, the hold-out.
constexpr uint64_t kTaskStream = 0x63616c6962ull;    // "calib"
constexpr uint64_t kHoldoutStream = 0x686f6c64ull;   // "hold"
constexpr uint64_t kCommTaskStream = 0x636f6d6dull;  // "comm"
constexpr std::array<const char*, 4> kPlanners = {"neuroshard", "torchrec", "size_lookup_greedy", "lookup_greedy"};
constexpr double kTaskFill = 0.7;  // share of the devices' memory a drawn task fills at most

// A small sharding task: 2 to 8 devices of `cap` bytes, each holding 2 to 10 tables on average.
std::vector<Table> draw_task(const std::vector<Table>& pool, int devices, int64_t cap, Rng& rng) {
  const int wanted = devices * (2 + static_cast<int>(rng.below(9)));
  std::vector<std::size_t> order(pool.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(order);
  std::vector<Table> tables;
  int64_t bytes = 0;
  const auto budget = static_cast<int64_t>(kTaskFill * static_cast<double>(cap) * devices);
  for (std::size_t k = 0; k < order.size() && static_cast<int>(tables.size()) < wanted; ++k) {
    Table t = pool[order[k]];
    t.dim = kWidthStep * (1 + static_cast<int>(rng.below(kMaxWidth / kWidthStep)));
    t.dtype = DType::kFp32;
    int64_t b = table_memory_bytes(t, Optimizer::kSgd);
    // Tables larger than a device are left to neuroshard's splits; the others must place them whole.
    if (b > cap || bytes + b > budget) continue;
    bytes += b;
    tables.push_back(std::move(t));
  }
  return tables;
}

// The task planned by planner `planner_index` (the first, neuroshard, needs `model`), each device's pieces;
// nullopt when it cannot fit.
std::optional<std::vector<DeviceShards>> plan_task(const std::vector<Table>& tables, int devices,
                                                   const CalibrationSampling& sampling,
                                                   const std::shared_ptr<const CostModel>& model,
                                                   std::size_t planner_index) {
  Cluster cluster;
  cluster.num_devices = devices;
  cluster.memory_per_device_bytes = sampling.memory_cap_bytes;
  PlannerConfig config;
  config.seed = sampling.seed;
  config.cost_model = model;
  config.neuroshard.threads = 1;  // the set must not depend on the machine's core count
  try {
    Plan plan = make_planner(kPlanners[planner_index], config)->plan(tables, cluster);
    return device_shards(plan, tables);
  } catch (const InfeasibleError&) {
    return std::nullopt;
  }
}

// The planners take turns; without a model, torchrec takes neuroshard's.
std::size_t planner_for(int64_t turn, const std::shared_ptr<const CostModel>& model) {
  std::size_t planner_index = static_cast<std::size_t>(turn) % kPlanners.size();
  if (!model && planner_index == 0) planner_index = 1;
  return planner_index;
}

std::optional<CalibrationSet> plan_device(const std::vector<Table>& pool, const CalibrationSampling& sampling,
                                          const std::shared_ptr<const CostModel>& model, int64_t index) {
  Rng rng(derive_seed(derive_seed(sampling.seed, kTaskStream), static_cast<uint64_t>(index)));
  const int devices = 2 << rng.below(3);  // 2, 4 or 8
  std::vector<Table> tables = draw_task(pool, devices, sampling.memory_cap_bytes, rng);
  if (tables.size() < 2) return std::nullopt;
  const std::size_t planner_index = planner_for(index / 2, model);  // the even samples
  std::optional<std::vector<DeviceShards>> shards = plan_task(tables, devices, sampling, model, planner_index);
  if (!shards) return std::nullopt;
  const int rank = static_cast<int>(rng.below(static_cast<uint64_t>(devices)));
  if ((*shards)[static_cast<std::size_t>(rank)].pieces.empty()) return std::nullopt;
  return CalibrationSet{std::move((*shards)[static_cast<std::size_t>(rank)].pieces),
                        fmt::format("plan:{} on {} devices, rank {}", kPlanners[planner_index], devices, rank)};
}

}  // namespace

CalibrationSet draw_calibration_set(const std::vector<Table>& pool, const CalibrationSampling& sampling,
                                    const std::shared_ptr<const CostModel>& model, int64_t index) {
  if (pool.empty()) throw InputError("calibrate: the table pool is empty");
  if (index % 2 == 0) {
    if (auto set = plan_device(pool, sampling, model, index)) return std::move(*set);
  }
  return CalibrationSet{draw_compute_sample(pool, sampling.max_tables, sampling.memory_cap_bytes, sampling.seed, index),
                        "random draw"};
}

std::optional<CalibrationPlan> draw_calibration_plan(const std::vector<Table>& pool,
                                                     const CalibrationSampling& sampling,
                                                     const std::shared_ptr<const CostModel>& model, int devices,
                                                     int64_t index) {
  if (pool.empty()) throw InputError("calibrate: the table pool is empty");
  Rng rng(derive_seed(derive_seed(sampling.seed, kCommTaskStream), static_cast<uint64_t>(index)));
  std::vector<Table> tables = draw_task(pool, devices, sampling.memory_cap_bytes, rng);
  if (tables.size() < 2) return std::nullopt;
  // Every planner in turn, neuroshard included: their plans balance the widths differently.
  const std::size_t planner_index = planner_for(index, model);
  std::optional<std::vector<DeviceShards>> shards = plan_task(tables, devices, sampling, model, planner_index);
  if (!shards) return std::nullopt;
  CalibrationPlan plan;
  plan.devices = std::move(*shards);
  plan.origin = fmt::format("plan:{} of {} tables on {} devices", kPlanners[planner_index], tables.size(), devices);
  return plan;
}

bool is_held_out(uint64_t seed, int64_t index, double fraction) {
  Rng rng(derive_seed(derive_seed(seed, kHoldoutStream), static_cast<uint64_t>(index)));
  return rng.uniform() < fraction;
}

}  // namespace shardplan
