#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "baseline_starts.hpp"
#include "greedy_baselines.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/planners/external_planner.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/search/measure_loop.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "torchrec_planner.hpp"

namespace shardplan {

const std::vector<std::string>& planner_names() {
  static const std::vector<std::string> names = {"neuroshard",         "torchrec",           "torchrec_cw32",
                                                 "torchrec_all_types", "size_lookup_greedy", "lookup_greedy",
                                                 "dim_greedy",         "size_greedy",        "random"};
  return names;
}

const std::vector<std::string>& measuring_planner_names() {
  static const std::vector<std::string> names = {"neuroshard_measured"};
  return names;
}

namespace {

// TorchRec's own planner, as each external name runs it: the compute device it plans for (its sharding
// types depend on it) and ParameterConstraints.min_partition (none: TorchRec's default, 128 columns).
struct TorchRecProgramVariant {
  const char* name;
  const char* compute_device;
  const char* min_partition;
};
constexpr TorchRecProgramVariant kTorchRecProgramVariants[] = {{"torchrec_planner", "cuda", nullptr},
                                                               {"torchrec_planner_cpu", "cpu", nullptr},
                                                               {"torchrec_planner_cw32", "cuda", "32"},
                                                               {"torchrec_planner_cpu_cw32", "cpu", "32"}};

bool named(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::unique_ptr<Planner> make_torchrec_program_planner(std::string_view name, const PlannerConfig& config) {
  if (config.torchrec_program.command.empty()) {
    throw InputError(
        fmt::format("planner \"{}\" runs TorchRec's own planner, and no program to run it was given", name));
  }
  const auto& variant = *std::find_if(std::begin(kTorchRecProgramVariants), std::end(kTorchRecProgramVariants),
                                      [&](const auto& v) { return name == v.name; });
  std::vector<std::string> arguments = {"--compute-device", variant.compute_device};
  if (variant.min_partition != nullptr) arguments.insert(arguments.end(), {"--min-partition", variant.min_partition});
  // A time limit bounds TorchRec's search too: its own timeout returns the best plan proposed by then.
  // TorchRec checks it only between proposals and partitions after it (856 tables on 128 GPUs: 50 s past
  // a 60 s timeout), so it gets half the limit, and its plan comes back before the program is killed.
  if (config.neuroshard.time_limit_seconds > 0) {
    const double seconds = std::max(1.0, std::floor(config.neuroshard.time_limit_seconds / 2.0));
    arguments.insert(arguments.end(), {"--timeout-seconds", std::to_string(static_cast<int64_t>(seconds))});
  }
  return make_external_planner(
      std::string(name), config.torchrec_program, std::move(arguments), config.neuroshard.sharding_types,
      {config.neuroshard.time_limit_seconds, config.neuroshard.time_limit_start, config.global_batch_size},
      config.deadline);
}

}  // namespace

const std::vector<std::string>& external_planner_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& variant : kTorchRecProgramVariants) all.emplace_back(variant.name);
    return all;
  }();
  return names;
}

std::unique_ptr<Planner> make_planner(std::string_view name, const PlannerConfig& config) {
  if (name == "neuroshard") {
    auto search = make_neuroshard_planner(config.cost_model, config.neuroshard);
    return config.neuroshard.baseline_starts ? make_baseline_checked_planner(std::move(search), config)
                                             : std::move(search);
  }
  if (name == "neuroshard_measured") {
    std::vector<std::shared_ptr<const Planner>> rivals;
    for (const std::string& rival : config.measure_loop.rivals) {
      // TorchRec's own planner is a rival too: the loop then never hands over a plan slower, measured, than it.
      const auto& known = planner_names();
      const auto& external = external_planner_names();
      if (rival == "neuroshard" || (!named(known, rival) && !named(external, rival))) {
        throw SettingError("measure loop rivals",
                           fmt::format("\"{}\" is not a baseline planner (known: {}, {})", rival,
                                       fmt::join(known.begin() + 1, known.end(), ", "), fmt::join(external, ", ")));
      }
      rivals.push_back(make_planner(rival, config));
    }
    return make_measured_neuroshard_planner(config.cost_model, config.neuroshard, config.measure_loop,
                                            config.measure_sets, std::move(rivals));
  }
  const auto& external = external_planner_names();
  if (named(external, name)) return make_torchrec_program_planner(name, config);
  const ShardingTypeSet types = config.neuroshard.sharding_types;
  if (name == "torchrec") return make_torchrec_planner(/*all_types=*/false, config.deadline, types);
  if (name == "torchrec_cw32") return make_torchrec_cw32_planner(config.deadline, types);
  if (name == "torchrec_all_types") return make_torchrec_planner(/*all_types=*/true, config.deadline, types);
  if (name == "random") return make_random_baseline(config.seed);
  if (name == "size_greedy") {
    return make_greedy_baseline("size_greedy", [](const Table& t, const Cluster& c) {
      return static_cast<double>(table_memory_bytes(t, c.optimizer));
    });
  }
  if (name == "dim_greedy") {
    return make_greedy_baseline("dim_greedy",
                                [](const Table& t, const Cluster&) { return static_cast<double>(t.dim); });
  }
  if (name == "lookup_greedy") {
    return make_greedy_baseline("lookup_greedy",
                                [](const Table& t, const Cluster&) { return t.dim * t.pooling_factor; });
  }
  if (name == "size_lookup_greedy") {
    return make_greedy_baseline("size_lookup_greedy", [](const Table& t, const Cluster&) {
      return t.dim * t.pooling_factor * std::log10(static_cast<double>(t.rows));
    });
  }
  throw SettingError("planner",
                     fmt::format("unknown planner \"{}\" (known: {}, {}, {})", name, fmt::join(planner_names(), ", "),
                                 fmt::join(measuring_planner_names(), ", "), fmt::join(external, ", ")));
}

}  // namespace shardplan
