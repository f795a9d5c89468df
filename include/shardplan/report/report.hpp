#pragma once
// The human-readable per-device report printed after planning.
#include <optional>
#include <string>
#include <vector>

#include "shardplan/core/plan.hpp"

namespace shardplan {

// A table on the device that bounds the step, and how much that device's predicted total would fall
// without it (bounding_drivers in bounding_drivers.hpp works this out).
struct CostDriver {
  std::string table;
  int64_t cols = 0;             // the table's columns on that device
  double pooling_factor = 0.0;  // the table's
  double saving_ms = 0.0;
};

struct BoundingDevice {
  int rank = 0;
  std::vector<CostDriver> drivers;  // largest saving first; empty when the device holds no tables
};

// What the report says beyond the plan itself. It needs a cost model or the other planners, so it is
// worked out by the caller and handed in, which keeps the formatting free of both.
// A table the plan keeps in host memory behind an HBM cache, as the cost model sees its largest block.
struct CachedTableReport {
  std::string name;
  double load_factor = 0.0;
  double miss_rate = 0.0;     // unique ids per batch not in the cache, over those the batch touches
  double rows_fetched = 0.0;  // per device and step: rows read over the host link (inserted and conflicts)
  double link_bytes = 0.0;    // per device and step, each way at most
  double cache_ms = 0.0;      // per device and step, in its total
  int64_t batch = 0;          // the global batch the estimate is for
};

struct PlanAnalysis {
  std::optional<BoundingDevice> bound;
  std::vector<BaselineOutcome> baselines;  // empty: no comparison was made
  std::vector<CachedTableReport> cached;   // the plan's cached tables (none: every table in HBM)
};

struct ReportOptions {
  bool full = false;              // one row per device, however many
  int max_rows = 32;              // above this many devices, show the heaviest and lightest rows only
  bool model_by_default = false;  // no cost model was named: the report says the bundled default scored it
  // How the reader asks for what the report leaves out, in the reader's terms (the CLI names its flags,
  // "--full-report" and "--no-baseline-starts"): "(96 devices not shown; a full report lists all)",
  // "the search found none (planning without baseline starts shows why)".
  std::string full_report = "a full report";
  std::string without_baseline_starts = "planning without baseline starts";
};

std::string format_report(const Plan& plan, const ReportOptions& options, const PlanAnalysis& analysis = {});

// "bounded by rank 3 (compute 1.0 ms, all-to-all 2.5 ms): its largest cost drivers are tables a (cols 64,
// pooling 20.0), ...; without each its total falls 1.200, 0.800 ms". `cost` is the rank's.
std::string format_bounding_device(const BoundingDevice& bound, const DeviceCost& cost);
// What measured-in-the-loop planning did: sets measured, the choice, each measured device's error.
std::string format_measure_loop(const MeasureLoopSummary& loop);
// "44.2% lower", "3.0% higher" or "the same": a plan's max against a baseline's.
std::string format_change(double baseline_ms, double plan_ms);
// The baseline with the lowest predicted max; nullptr when none found a plan.
const BaselineOutcome* best_baseline(const std::vector<BaselineOutcome>& baselines);
// "vs best baseline: torchrec max 320.755 ms -> this plan 179.100 ms (44.2% lower)", then
// "baselines X, Y: no plan (why)" for those that failed, one line per reason; empty without baselines.
std::string format_baseline_comparison(const std::vector<BaselineOutcome>& baselines, double plan_max_ms);

}  // namespace shardplan
