#pragma once
// A sharding plan: where every piece of every table lives, and what the cost model predicts per device.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/model_hardware.hpp"
#include "shardplan/core/replan_summary.hpp"
#include "shardplan/core/sharding_type.hpp"
#include "shardplan/core/table.hpp"
#include "shardplan/core/uvm_cache.hpp"

namespace shardplan {

// A rectangle of a table, [row_offset, row_offset + rows) x [col_offset, col_offset + cols), on a rank.
struct Shard {
  int rank = 0;
  int64_t row_offset = 0;
  int64_t col_offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

// TorchRec's CacheParams for a table kept in host memory behind an HBM cache (the fused_uvm_caching
// kernel): an LRU cache of load_factor x each shard's rows, in (0, 1).
struct CacheParams {
  double load_factor = 0.0;
};

struct TableSharding {
  std::string name;
  int64_t rows = 0;
  int dim = 0;
  DType dtype = DType::kFp32;
  ShardingType type = ShardingType::kTableWise;
  std::vector<Shard> shards;  // column-wise: in column order
  std::optional<CacheParams> cache =
      std::nullopt;  // set: fused_uvm_caching, weights in the host's DDR; unset: fused in HBM
};

// The compute kernel TorchRec runs a table with: "dense" for replicas, "fused_uvm_caching" for a cached
// table, "fused" otherwise.
std::string_view compute_kernel_name(const TableSharding& table);

struct DeviceCost {
  double compute_ms = 0.0;
  double fw_comm_ms = 0.0;
  double bw_comm_ms = 0.0;
  double cache_ms = 0.0;  // its cached pieces' misses over the host link (0 without any)
  double total_ms() const { return compute_ms + fw_comm_ms + bw_comm_ms + cache_ms; }
};

// The slowest device's total: the plan's cost (0 for no devices).
double max_total_ms(const std::vector<DeviceCost>& costs);

// A plan's predicted costs at a glance, as every report states them.
struct CostSummary {
  double max_ms = 0.0;          // the slowest device's total
  int slowest = 0;              // its rank (the lowest, on ties)
  double mean_ms = 0.0;         // mean total over all devices
  double max_compute_ms = 0.0;  // the largest compute alone
  double imbalance() const { return mean_ms > 0 ? max_ms / mean_ms : 1.0; }
};

CostSummary summarise_costs(const std::vector<DeviceCost>& costs);

// "max 12.345 ms on rank 3, mean 10.000 ms, imbalance 1.234"
std::string format_cost_summary(const CostSummary& summary);

// What measured-in-the-loop planning (measure_loop.hpp) did for a plan.
struct MeasuredDevice {
  int rank = 0;
  double predicted_ms = 0.0;  // the uncorrected model's compute
  double measured_ms = 0.0;   // this machine's fastest step
};

// MeasureLoopSummary::chosen_from for the search's own plans (a rival's bear its planner's name).
inline constexpr const char* kSearchPlanSource = "neuroshard";

struct MeasureLoopSummary {
  int budget = 0;  // shard sets it could measure
  int sets_measured = 0;
  int rounds = 0;      // searches run
  int candidates = 0;  // distinct plans compared at the end
  int chosen = 0;      // the chosen plan's rank among them by uncorrected prediction (0: the model's pick)
  std::string chosen_from = kSearchPlanSource;  // the planner whose plan was chosen: the search or a rival
  int rival_sets_measured = 0;                  // of sets_measured, those measured for the rivals' bounds
  double compute_scale = 1.0;                   // the fitted machine factor on every device's compute
  int corrected_tables = 0;                     // tables measured slower than predicted, with a factor of their own
  bool verified = false;                        // every device that may bound the chosen plan was measured
  double estimated_max_ms = 0.0;                // the chosen plan's slowest device, measured compute where measured
  std::vector<MeasuredDevice> devices;          // the chosen plan's measured devices, by rank
};

// How the NeuroShard search ended (only its plans carry one). Deterministic unless cut_short.
// Another planner's plan for the same tables, scored by the same model (compare_with_baselines in
// baseline_comparison.hpp).
struct BaselineOutcome {
  std::string planner;
  std::optional<double> max_total_ms;  // nullopt: it found no plan
  std::string failure;                 // why not, when it did not
  bool out_of_time = false;            // a time limit passed before it ran or finished: not compared
};

struct SearchSummary {
  int steps = 0;                    // split steps run
  int step_budget = 0;              // steps it could run (--steps, or auto_split_steps)
  int splits = 0;                   // column-wise halvings in the plan
  std::string stopped;              // "step budget", "patience", "nothing to split", "time limit"
  int refine_rounds = 0;            // refinement moves accepted
  int type_moves = 0;               // conversions and shard moves of the sharding-type pass
  int converted = 0;                // tables it gave another sharding type
  std::string sharding_types;       // the types it was allowed (--sharding-types), comma-separated
  bool cut_short = false;           // --time-limit ended the search or the refinement early
  double time_limit_seconds = 0.0;  // 0: none
  // The baseline whose plan the returned one starts from, where that scored better than the search's own
  // or the search found none (baseline_starts.hpp); empty: the search's own.
  std::string started_from;
  double search_max_ms = 0.0;  // the search's own plan's predicted cost then (0: it found none)
  // Every baseline the starts planned, scored as it planned (before the type pass). Not written to the
  // plan file: the report's comparison reuses them instead of planning them again.
  std::vector<BaselineOutcome> baselines;
};

struct Plan {
  std::string algorithm;
  Cluster cluster;
  uint64_t seed = 0;
  std::vector<TableSharding> tables;  // in input order
  // Per-device predictions, when the plan was scored by a cost model (named in cost_model).
  std::optional<std::vector<DeviceCost>> device_costs;
  std::string cost_model;
  std::optional<ModelHardware> cost_model_hardware;  // what the cost model was measured on
  std::optional<MeasureLoopSummary> measure_loop;    // when its devices were measured while planning
  std::optional<SearchSummary> search;               // the NeuroShard search's own plans
  std::optional<ReplanSummary> replan;               // a plan made from an old plan (plan --from)
  double planning_seconds = 0.0;
};

// What a device holds under a plan.
struct DeviceUsage {
  int64_t memory_bytes = 0;  // HBM: a cached piece's cache and state, any other shard whole
  int64_t ddr_bytes = 0;     // host memory its cached pieces keep there (the host's devices share it)
  int num_shards = 0;
  int num_table_wise = 0;
  int num_column_wise = 0;
  int num_row_wise = 0;       // row_wise and table_row_wise blocks
  int num_data_parallel = 0;  // replicas
  // The device's pooled output width: its shards' columns, a row-wise table's width on every device (all
  // ranks join its reduce-scatter, block or not), nothing for replicas.
  int64_t dim_sum = 0;
};

std::vector<DeviceUsage> device_usage(const Plan& plan);

// Per host: the DDR its devices' cached pieces keep there.
std::vector<int64_t> host_ddr_bytes(const Plan& plan, const std::vector<DeviceUsage>& usage);
bool has_cached_tables(const Plan& plan);

// A shard's HBM and DDR under the plan's kernel for its table.
PieceMemory shard_memory(const TableSharding& table, const Shard& shard, Optimizer optimizer);

// "rank:5/cuda:5" for rank 5 with 8 devices per host; the local device index is rank mod K.
std::string placement_string(int rank, int devices_per_host);

// A table's sharding from its shards (in column order): table-wise when one shard holds every column
// (column-wise when the table's constraints allow only that), column-wise otherwise.
TableSharding sharding_of(const Table& table, std::vector<Shard> shards);

// A shard as a table of its own: its rows and columns, with the lookups that fall in its rows (ids are
// hashed, so a row range receives its share of the table's pooling factor).
Table shard_as_table(const Table& table, const Shard& shard);

// A data-parallel replica as a table of its own: every row, with the lookups of this rank's 1/W of the
// batch (each replica serves its own rank's samples; the model-parallel shards serve the whole batch).
Table replica_as_table(const Table& table, int num_devices);

// What one device holds under a plan, as the cost model and the benchmark kernel see it: each shard as a
// table of its own (shard_as_table, replica_as_table), the plan table it comes from, the device's output
// width in the all-to-all, and the bytes of data-parallel gradients every device all-reduces.
struct DeviceShards {
  std::vector<Table> pieces;
  std::vector<std::size_t> plan_tables;  // per piece: its index in plan.tables
  std::vector<double> load_factors;      // per piece: its cache's load factor; 0: not cached
  int64_t dim_sum = 0;
  // The ids (and lengths) per sample the device's pieces receive in the input all-to-all
  // (input_ids_per_sample summed; a data-parallel replica reads its own samples' ids, so none).
  double input_ids = 0.0;
  int64_t allreduce_bytes = 0;  // the same on every device
  // The plan's row-wise tables' summed width: every device joins their reduce-scatter and all-gather.
  int64_t row_wise_dim = 0;
  // The largest summed width of one host's table-row-wise tables: each host's devices reduce-scatter and
  // all-gather their host's blocks among themselves, and the all-to-all after waits for the slowest host.
  int64_t host_row_wise_dim = 0;
  int devices_per_host = 1;  // the plan's
  // The plan's sharding types that distribute inputs and outputs in all-to-alls (all but data-parallel):
  // TorchRec runs each one's collectives on its own.
  int alltoall_groups = 0;
};

// What a sharded piece receives in the input all-to-all per sample: the ids its rows hold (its pooling
// factor: a column piece the whole table's, a row block its rows' share) and one length per feature.
inline double input_ids_per_sample(const Table& piece) { return piece.pooling_factor + 1.0; }
// The same for `shard` of `table`, without building the piece (shard_as_table's pooling factor).
double input_ids_per_sample(const Table& table, const Shard& shard);

// The bytes of the gradients a data-parallel table's replicas all-reduce each step: the whole table.
int64_t replica_gradient_bytes(const Table& table);
int64_t replica_gradient_bytes(const TableSharding& table);

// A replica's device memory: weights and optimizer state like any shard, plus its dense gradient, which
// TorchRec's data-parallel (dense kernel, DDP) keeps whole on every GPU.
int64_t replica_memory_bytes(const Table& table, Optimizer optimizer);

// Per device, in rank order. `tables` must hold every table the plan names.
std::vector<DeviceShards> device_shards(const Plan& plan, const std::vector<Table>& tables);

// Which plan this is: every table's sharding type and shards, in order. Two plans with the same key place
// the same shards on the same devices.
std::string plan_layout_key(const Plan& plan);

// Everything about a piece that a device's compute depends on, as one line.
std::string shard_piece_key(const Table& piece);
// A device's shard set as a key: the same for the same pieces in any order, in any plan.
std::string shard_set_key(const std::vector<Table>& pieces);

// A table placed whole on one rank (as sharding_of types it).
TableSharding table_wise_sharding(const Table& table, int rank);

// The layouts TorchRec's helpers build (tools/plan_to_torchrec.py), so that plans load there unchanged:
//   row_wise:       ceil(rows / W) rows on each of ranks 0, 1, ... in row order (empty blocks left out);
//   table_row_wise: ceil(rows / K) rows on each rank of host h (ranks hK, hK+1, ...), likewise (TorchRec
//                   needs whole hosts: the device count a multiple of K);
//   data_parallel:  the whole table on every rank, in rank order.
TableSharding row_wise_sharding(const Table& table, int num_devices);
TableSharding table_row_wise_sharding(const Table& table, int host, int devices_per_host);
TableSharding data_parallel_sharding(const Table& table, int num_devices);

}  // namespace shardplan
