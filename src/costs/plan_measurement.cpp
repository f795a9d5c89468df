#include "shardplan/costs/plan_measurement.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {

namespace {

// Bytes the benchmark allocates for a device's shards (fp32 weights, as collect-costs builds them).
int64_t measured_weight_bytes(const std::vector<Table>& shards) {
  int64_t bytes = 0;
  for (const auto& shard : shards) bytes += shard_memory_bytes(shard.rows, shard.dim, DType::kFp32, Optimizer::kSgd);
  return bytes;
}

// Half of physical memory: room for the weights, their gradients and everything else running.
int64_t default_measure_memory_cap() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 4ll << 30;
  return static_cast<int64_t>(pages) * page_size / 2;
}

// One distinct shard set: its pieces in a canonical order, and its measurement so far.
struct ShardSet {
  std::vector<Table> pieces;
  uint64_t trace_seed = 0;
  std::optional<double> fastest_ms;
  std::string skipped;
};

// Measures the sets in interleaved rounds, each keeping its fastest step.
bool measure_sets(std::vector<ShardSet>& sets, const PlanMeasureConfig& config, const ComputeTimer& timer) {
  install_interrupt_handlers();
  bool interrupted = false;
  const int64_t total = static_cast<int64_t>(sets.size()) * config.rounds;
  Progress progress("shard sets measured", total, 0, config.quiet);
  int64_t done = 0;
  // Round by round, so a slow stretch of the machine costs every set one round rather than one set all.
  for (int round = 0; round < config.rounds && !interrupted; ++round) {
    for (auto& set : sets) {
      if (interrupt_requested()) {
        interrupted = true;
        break;
      }
      ++done;
      if (!set.skipped.empty()) continue;
      ComputeTiming timing = timer(set.pieces, set.trace_seed);
      double fastest = fastest_ms(timing.iterations_ms, timing.median_ms);
      set.fastest_ms = set.fastest_ms ? std::min(*set.fastest_ms, fastest) : fastest;
      progress.update(done, fmt::format("round {} {:.2f} ms", round + 1, fastest));
    }
  }
  progress.finish();
  for (const auto& set : sets) {
    if (!set.skipped.empty()) spdlog::warn("{} shards not measured: {}", set.pieces.size(), set.skipped);
  }
  return interrupted;
}

// `pieces` in canonical order, with their key (the same for any order of the same pieces).
std::pair<std::string, std::vector<Table>> canonical_pieces(const std::vector<Table>& pieces) {
  std::vector<std::pair<std::string, std::size_t>> keyed;
  for (std::size_t i = 0; i < pieces.size(); ++i) keyed.emplace_back(shard_piece_key(pieces[i]), i);
  std::sort(keyed.begin(), keyed.end());
  std::string key;
  for (const auto& [piece, index] : keyed) key += piece;
  std::vector<Table> ordered;
  for (const auto& [piece, index] : keyed) ordered.push_back(pieces[index]);
  return {std::move(key), std::move(ordered)};
}

// The set of `pieces` in canonical order, with its key, its traces' seed and, over the cap, why it is skipped.
std::pair<std::string, ShardSet> canonical_set(const std::vector<Table>& pieces, const PlanMeasureConfig& config,
                                               int64_t cap) {
  auto [key, ordered] = canonical_pieces(pieces);
  ShardSet set;
  set.pieces = std::move(ordered);
  set.trace_seed = derive_seed(config.seed, fnv1a_hash(key));
  if (int64_t bytes = measured_weight_bytes(set.pieces); bytes > cap) {
    set.skipped =
        fmt::format("its weights need {}, over the measurement cap of {}", format_bytes(bytes), format_bytes(cap));
  }
  return {std::move(key), std::move(set)};
}

// The distinct non-empty shard sets of plans' devices in first-seen order (made by `make` from a device's
// pieces, with their key), and for every plan's device the set it holds (nullopt: an empty device).
template <typename Set, typename MakeSet>
std::vector<std::vector<std::optional<std::size_t>>> distinct_device_sets(const std::vector<const Plan*>& plans,
                                                                          const std::vector<Table>& tables,
                                                                          std::vector<Set>& sets, MakeSet make) {
  std::map<std::string, std::size_t> set_of_key;
  std::vector<std::vector<std::optional<std::size_t>>> device_set(plans.size());
  for (std::size_t p = 0; p < plans.size(); ++p) {
    for (auto& device : device_shards(*plans[p], tables)) {
      if (device.pieces.empty()) {
        device_set[p].push_back(std::nullopt);
        continue;
      }
      auto [key, set] = make(device.pieces);
      auto [it, added] = set_of_key.emplace(std::move(key), sets.size());
      if (added) sets.push_back(std::move(set));
      device_set[p].push_back(it->second);
    }
  }
  return device_set;
}

int64_t measurement_cap(const PlanMeasureConfig& config) {
  return config.memory_cap_bytes > 0 ? config.memory_cap_bytes : default_measure_memory_cap();
}

}  // namespace

void validate_plan_measure(const PlanMeasureConfig& config) {
  constexpr int kMaxRounds = 1000;
  if (config.rounds < 1 || config.rounds > kMaxRounds) {
    throw SettingError("measure rounds", fmt::format("must be in [1, {}], got {}", kMaxRounds, config.rounds));
  }
}

std::vector<PlanMeasurement> measure_plans(const std::vector<const Plan*>& plans, const std::vector<Table>& tables,
                                           const PlanMeasureConfig& config, const ComputeTimer& timer) {
  validate_plan_measure(config);
  const int64_t cap = measurement_cap(config);
  std::vector<ShardSet> sets;
  const auto device_set = distinct_device_sets(
      plans, tables, sets, [&](const std::vector<Table>& pieces) { return canonical_set(pieces, config, cap); });
  const bool interrupted = measure_sets(sets, config, timer);

  std::vector<PlanMeasurement> results(plans.size());
  for (std::size_t p = 0; p < plans.size(); ++p) {
    PlanMeasurement& result = results[p];
    result.interrupted = interrupted;
    for (const auto& s : device_set[p]) {
      if (!s) {
        result.compute_ms.push_back(0.0);
        result.skipped.push_back("");
        continue;
      }
      const ShardSet& set = sets[*s];
      result.compute_ms.push_back(set.fastest_ms);
      result.skipped.push_back(set.fastest_ms ? "" : set.skipped.empty() ? "interrupted" : set.skipped);
    }
  }
  return results;
}

std::vector<std::vector<std::optional<double>>> measure_plan_devices(const std::vector<const Plan*>& plans,
                                                                     const std::vector<Table>& tables,
                                                                     const ShardSetMeasurer& measure) {
  std::vector<std::vector<Table>> sets;
  const auto device_set = distinct_device_sets(plans, tables, sets, canonical_pieces);
  const std::vector<std::optional<double>> measured = measure(sets);
  std::vector<std::vector<std::optional<double>>> results(plans.size());
  for (std::size_t p = 0; p < plans.size(); ++p) {
    for (const auto& s : device_set[p]) results[p].push_back(s ? measured.at(*s) : std::optional<double>(0.0));
  }
  return results;
}

std::vector<std::optional<double>> measure_shard_sets(const std::vector<std::vector<Table>>& shard_sets,
                                                      const PlanMeasureConfig& config, const ComputeTimer& timer) {
  validate_plan_measure(config);
  const int64_t cap = measurement_cap(config);
  std::vector<ShardSet> sets;
  for (const auto& pieces : shard_sets) {
    if (pieces.empty()) throw InputError("measure_shard_sets: an empty shard set");
    sets.push_back(canonical_set(pieces, config, cap).second);
  }
  measure_sets(sets, config, timer);
  std::vector<std::optional<double>> out;
  for (const auto& set : sets) out.push_back(set.fastest_ms);
  return out;
}

PlanMeasurement measure_plan(const Plan& plan, const std::vector<Table>& tables, const PlanMeasureConfig& config,
                             const ComputeTimer& timer) {
  return measure_plans({&plan}, tables, config, timer).front();
}

}  // namespace shardplan
