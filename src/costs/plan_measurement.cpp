#include "shardplan/costs/plan_measurement.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "shardplan/dataset/random.hpp"
#include "shardplan/interrupt.hpp"
#include "shardplan/progress.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

int64_t measured_weight_bytes(const std::vector<Table>& shards) {
  int64_t bytes = 0;
  for (const auto& shard : shards) bytes += shard_memory_bytes(shard.rows, shard.dim, DType::kFp32, Optimizer::kSgd);
  return bytes;
}

int64_t default_measure_memory_cap() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 4ll << 30;
  return static_cast<int64_t>(pages) * page_size / 2;
}

PlanMeasurement measure_plan(const Plan& plan, const std::vector<Table>& tables, const PlanMeasureConfig& config) {
  std::vector<DeviceShards> shards = device_shards(plan, tables);
  const std::size_t devices = shards.size();
  const int64_t cap = config.memory_cap_bytes > 0 ? config.memory_cap_bytes : default_measure_memory_cap();

  PlanMeasurement result;
  result.compute_ms.assign(devices, std::nullopt);
  result.skipped.assign(devices, "");
  install_interrupt_handlers();
  Progress progress("devices measured", static_cast<int64_t>(devices), 0, config.quiet);
  for (std::size_t r = 0; r < devices; ++r) {
    if (interrupt_requested()) {
      result.interrupted = true;
      result.skipped[r] = "interrupted";
      continue;
    }
    if (shards[r].pieces.empty()) {
      result.compute_ms[r] = 0.0;
    } else if (int64_t bytes = measured_weight_bytes(shards[r].pieces); bytes > cap) {
      result.skipped[r] = fmt::format("its weights need {}, over the measurement cap of {}", format_bytes(bytes),
                                      format_bytes(cap));
      spdlog::warn("rank {}: not measured: {}", r, result.skipped[r]);
    } else {
      // Traces depend on the seed and the rank only, so a plan measures the same way every time.
      ComputeTiming timing = measure_compute_step(shards[r].pieces, config.bench, derive_seed(config.seed, r));
      result.compute_ms[r] = *std::min_element(timing.iterations_ms.begin(), timing.iterations_ms.end());
    }
    progress.update(static_cast<int64_t>(r) + 1,
                    result.compute_ms[r] ? fmt::format("rank {} {:.2f} ms", r, *result.compute_ms[r]) : "");
  }
  progress.finish();
  return result;
}

}  // namespace shardplan
