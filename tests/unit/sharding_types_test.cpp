// Row-wise, table-row-wise and data-parallel sharding: layouts, memory, validation, costs and the
// search's choice between them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sharding_type_pass.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/measured_comm.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/cost_model/comm_structure.hpp"
#include "shardplan/planners/planner.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;

Plan plan_of(const Cluster& cluster, std::vector<TableSharding> tables) {
  Plan plan;
  plan.algorithm = "test";
  plan.cluster = cluster;
  plan.tables = std::move(tables);
  return plan;
}

ValidationResult validate(const Plan& plan, const std::vector<Table>& tables) {
  return validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
}

// Every cell of the table in exactly one shard (replicas: every cell on every rank).
int64_t covered_cells(const TableSharding& sharding) {
  int64_t cells = 0;
  for (const auto& s : sharding.shards) cells += s.rows * s.cols;
  return cells;
}

TEST(ShardingTypes, RowBlocksTileTheTableAsTorchRecLaysThemOut) {
  Table table = make_table("t", 10, 16, 4.0);
  TableSharding rw = row_wise_sharding(table, 4);
  EXPECT_EQ(rw.type, ShardingType::kRowWise);
  ASSERT_EQ(rw.shards.size(), 4u);  // ceil(10 / 4) = 3: 3, 3, 3, 1
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(rw.shards[static_cast<std::size_t>(k)].rank, k);
    EXPECT_EQ(rw.shards[static_cast<std::size_t>(k)].row_offset, 3 * k);
    EXPECT_EQ(rw.shards[static_cast<std::size_t>(k)].cols, 16);
  }
  EXPECT_EQ(rw.shards.back().rows, 1);
  EXPECT_EQ(covered_cells(rw), 10 * 16);
  // 9 rows over 4 ranks of ceil 3: three blocks, the fourth rank holds none.
  EXPECT_EQ(row_wise_sharding(make_table("u", 9, 8), 4).shards.size(), 3u);

  TableSharding trw = table_row_wise_sharding(table, 1, 4);
  EXPECT_EQ(trw.type, ShardingType::kTableRowWise);
  ASSERT_EQ(trw.shards.size(), 4u);
  EXPECT_EQ(trw.shards.front().rank, 4);
  EXPECT_EQ(trw.shards.back().rank, 7);
  EXPECT_EQ(covered_cells(trw), 10 * 16);

  TableSharding dp = data_parallel_sharding(table, 3);
  EXPECT_EQ(dp.type, ShardingType::kDataParallel);
  ASSERT_EQ(dp.shards.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(dp.shards[static_cast<std::size_t>(r)].rank, r);
  EXPECT_EQ(covered_cells(dp), 3 * 10 * 16);

  Cluster cluster = cluster_of(8, 1ll << 30);
  cluster.devices_per_host = 4;
  std::vector<Table> tables{table, make_table("a", 100, 8), make_table("b", 64, 4)};
  Plan plan = plan_of(cluster, {table_row_wise_sharding(tables[0], 1, 4), row_wise_sharding(tables[1], 8),
                                data_parallel_sharding(tables[2], 8)});
  ValidationResult result = validate(plan, tables);
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

TEST(ShardingTypes, MemoryCountsReplicasEverywhereAndOptimizerStatePerBlock) {
  Cluster cluster = cluster_of(4, 1ll << 30);
  cluster.optimizer = Optimizer::kRowwiseAdagrad;
  Table big = make_table("big", 1000, 32);
  Table small = make_table("small", 10, 8);
  Plan plan = plan_of(cluster, {row_wise_sharding(big, 4), data_parallel_sharding(small, 4)});
  std::vector<DeviceUsage> usage = device_usage(plan);
  const int64_t block = 250 * 32 * 4 + 250 * 4;              // weights and one fp32 of state per row of the block
  const int64_t replica = 10 * 8 * 4 + 10 * 4 + 10 * 8 * 4;  // and its dense gradient
  for (const auto& u : usage) {
    EXPECT_EQ(u.memory_bytes, block + replica);
    EXPECT_EQ(u.num_row_wise, 1);
    EXPECT_EQ(u.num_data_parallel, 1);
    EXPECT_EQ(u.dim_sum, 32);  // a replica sends nothing in the all-to-all
  }
  // The validator counts the same: a cluster one byte short of it is refused.
  cluster.memory_per_device_bytes = block + replica - 1;
  plan.cluster = cluster;
  ValidationResult result = validate(plan, {big, small});
  ASSERT_FALSE(result.valid());
  EXPECT_NE(result.problems.front().find("over its usable"), std::string::npos) << result.problems.front();
  cluster.memory_per_device_bytes = block + replica;
  plan.cluster = cluster;
  EXPECT_TRUE(validate(plan, {big, small}).valid());
}

TEST(ShardingTypes, ValidatorRefusesGapsHostsAndMissingReplicas) {
  Cluster cluster = cluster_of(8, 1ll << 30);
  cluster.devices_per_host = 4;
  Table table = make_table("t", 10, 16);
  std::vector<Table> tables{table};

  TableSharding gap = row_wise_sharding(table, 4);
  gap.shards.erase(gap.shards.begin() + 1);
  ValidationResult result = validate(plan_of(cluster, {gap}), tables);
  ASSERT_FALSE(result.valid());
  EXPECT_NE(result.problems.front().find("gaps"), std::string::npos) << result.problems.front();

  TableSharding split_host = table_row_wise_sharding(table, 0, 4);
  split_host.shards.back().rank = 5;
  result = validate(plan_of(cluster, {split_host}), tables);
  ASSERT_FALSE(result.valid());
  EXPECT_NE(result.problems.front().find("one host"), std::string::npos) << result.problems.front();

  TableSharding missing = data_parallel_sharding(table, 8);
  missing.shards.pop_back();
  result = validate(plan_of(cluster, {missing}), tables);
  ASSERT_FALSE(result.valid());
  EXPECT_NE(result.problems.front().find("one replica on each of the 8 ranks"), std::string::npos)
      << result.problems.front();
}

TEST(ShardingTypes, PlanFileRoundTripKeepsTheTypes) {
  Cluster cluster = cluster_of(8, 1ll << 30);
  cluster.devices_per_host = 4;
  std::vector<Table> tables{make_table("rw", 100, 8), make_table("trw", 50, 8), make_table("dp", 7, 4),
                            make_table("tw", 7, 4)};
  Plan plan = plan_of(cluster, {row_wise_sharding(tables[0], 8), table_row_wise_sharding(tables[1], 1, 4),
                                data_parallel_sharding(tables[2], 8), table_wise_sharding(tables[3], 3)});
  Plan read = plan_from_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  ASSERT_EQ(read.tables.size(), 4u);
  EXPECT_EQ(read.tables[0].type, ShardingType::kRowWise);
  EXPECT_EQ(read.tables[1].type, ShardingType::kTableRowWise);
  EXPECT_EQ(read.tables[2].type, ShardingType::kDataParallel);
  EXPECT_EQ(read.tables[3].type, ShardingType::kTableWise);
  EXPECT_EQ(plan_to_string(read), plan_to_string(plan));
  // TorchRec trains replicas with its dense kernel.
  auto doc = nlohmann::json::parse(plan_to_string(plan));
  EXPECT_EQ(doc["tables"][2]["compute_kernel"], "dense");
  EXPECT_EQ(doc["tables"][0]["compute_kernel"], "fused");
}

TEST(ShardingTypes, ReplicasServeTheirRanksSamplesAndAllReduceTheirGradients) {
  Cluster cluster = cluster_of(4, 1ll << 30);
  Table table = make_table("dp", 1000, 16, 8.0);
  Plan plan = plan_of(cluster, {data_parallel_sharding(table, 4)});
  std::vector<DeviceShards> devices = device_shards(plan, {table});
  for (const auto& d : devices) {
    ASSERT_EQ(d.pieces.size(), 1u);
    EXPECT_EQ(d.pieces[0].rows, 1000);
    EXPECT_DOUBLE_EQ(d.pieces[0].pooling_factor, 2.0);
    EXPECT_EQ(d.dim_sum, 0);
    EXPECT_EQ(d.allreduce_bytes, 1000 * 16 * 4);
  }
  auto model = testing::analytic_model();
  const double allreduce = model->allreduce_ms(1000.0 * 16 * 4, 4);
  EXPECT_GT(allreduce, 0.0);
  for (const auto& cost : score_plan(plan, {table}, *model)) EXPECT_DOUBLE_EQ(cost.bw_comm_ms, allreduce);
}

// The input all-to-all brings each shard the ids its rows hold and a length per sample: every column piece
// the whole table's, a row block its share, a replica none (it reads its own samples).
TEST(ShardingTypes, EachShardReceivesItsIdsInTheInputAllToAll) {
  Cluster cluster = cluster_of(4, 1ll << 30);
  Table table = make_table("t", 1000, 16, 8.0);
  auto ids_of = [&](const TableSharding& sharding) {
    std::vector<double> ids;
    for (const auto& d : device_shards(plan_of(cluster, {sharding}), {table})) ids.push_back(d.input_ids);
    return ids;
  };
  EXPECT_EQ(ids_of(table_wise_sharding(table, 2)), (std::vector<double>{0, 0, 9, 0}));
  EXPECT_EQ(ids_of(sharding_of(table, {Shard{0, 0, 0, 1000, 8}, Shard{3, 0, 8, 1000, 8}})),
            (std::vector<double>{9, 0, 0, 9}));
  EXPECT_EQ(ids_of(row_wise_sharding(table, 4)), (std::vector<double>{3, 3, 3, 3}));
  EXPECT_EQ(ids_of(data_parallel_sharding(table, 4)), (std::vector<double>{0, 0, 0, 0}));
}

// A row-wise table's bytes are in the all-to-all's widths; its reduce-scatter and all-gather add their
// latency to every device: 2 (W - 1) ring steps, what an all-reduce of almost nothing costs.
TEST(ShardingTypes, RowWiseTablesAddTheirCollectivesLatency) {
  Cluster cluster = cluster_of(4, 1ll << 30);
  Table rw = make_table("rw", 4000, 16, 8.0);
  Table rw2 = make_table("rw2", 4000, 12, 1.0);
  Table tw = make_table("tw", 1000, 8, 2.0);
  Plan with = plan_of(cluster, {row_wise_sharding(rw, 4), table_wise_sharding(tw, 0), row_wise_sharding(rw2, 4)});
  std::vector<DeviceShards> devices = device_shards(with, {rw, tw, rw2});
  for (const auto& d : devices) EXPECT_EQ(d.row_wise_dim, 16 + 12);
  auto model = testing::analytic_model();
  const double latency = model->allreduce_ms(4.0, 4);
  EXPECT_GT(latency, 0.0);
  EXPECT_DOUBLE_EQ(plan_collectives_ms(*model, devices), latency);
  EXPECT_DOUBLE_EQ(extra_collectives_ms(*model, 4000, 28, 4), model->allreduce_ms(4000.0, 4) + latency);
  EXPECT_EQ(extra_collectives_ms(*model, 4000, 28, 1), 0.0);
  Plan without =
      plan_of(cluster, {table_wise_sharding(rw, 1), table_wise_sharding(tw, 0), table_wise_sharding(rw2, 2)});
  EXPECT_EQ(device_shards(without, {rw, tw, rw2}).front().row_wise_dim, 0);
  EXPECT_EQ(plan_collectives_ms(*model, device_shards(without, {rw, tw, rw2})), 0.0);
  // The same widths scored without the row-wise flag lose exactly that latency from every backward.
  std::vector<int64_t> widths;
  std::vector<double> ids;
  for (const auto& d : devices) {
    widths.push_back(d.dim_sum);
    ids.push_back(d.input_ids);
  }
  const std::vector<double> compute = model->predict_compute(compute_sets(devices));
  const std::vector<DeviceCost> plain = costs_from_compute(*model, compute, widths, ids);
  const std::vector<DeviceCost> scored = score_plan(with, {rw, tw, rw2}, *model);
  for (std::size_t r = 0; r < scored.size(); ++r)
    EXPECT_NEAR(scored[r].bw_comm_ms, plain[r].bw_comm_ms + latency, 1e-9);
}

// A row-wise table with fewer blocks than GPUs (17 rows on 8 GPUs: blocks of 3 on ranks 0-5): every rank
// still joins its reduce-scatter, so every rank carries its width, as the measured step times it.
TEST(ShardingTypes, EveryRankCarriesARowWiseTablesWidth) {
  Cluster cluster = cluster_of(8, 1ll << 30);
  Table small = make_table("small", 17, 12, 4.0);
  Plan plan = plan_of(cluster, {row_wise_sharding(small, 8)});
  ASSERT_EQ(plan.tables[0].shards.size(), 6u);
  for (const auto& d : device_shards(plan, {small})) EXPECT_EQ(d.dim_sum, 12);
  for (const auto& u : device_usage(plan)) EXPECT_EQ(u.dim_sum, 12);
  auto comm = comm_to_measure(plan, std::vector<std::optional<double>>(8, 1.0));
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(comm->rw_dim, 12);
  EXPECT_EQ(comm->dim_sums, std::vector<int64_t>(8, 0));
}

TEST(ShardingTypes, RingAllReduceByHand) {
  CommFabric fabric;
  fabric.devices_per_host = 4;
  fabric.intra_bytes_per_ms = 1000.0;
  fabric.intra_peer_latency_ms = 0.01;
  fabric.inter_bytes_per_ms = 100.0;
  fabric.inter_peer_latency_ms = 0.1;
  // One host of 4: 2 x 3/4 x 1000 bytes at 1000 B/ms, and 6 steps of 0.01 ms.
  EXPECT_NEAR(ring_allreduce_ms(fabric, 1000.0, 4), 1.5 + 0.06, 1e-12);
  // Two hosts: the ring crosses the network, at its rate and latency: 2 x 7/8 x 1000 / 100 + 14 x 0.1.
  EXPECT_NEAR(ring_allreduce_ms(fabric, 1000.0, 8), 17.5 + 1.4, 1e-12);
  // A port the host's 4 GPUs share gives each a quarter of it.
  fabric.inter_shared_by_host = true;
  EXPECT_NEAR(ring_allreduce_ms(fabric, 1000.0, 8), 70.0 + 1.4, 1e-12);
  EXPECT_EQ(ring_allreduce_ms(fabric, 1000.0, 1), 0.0);
  EXPECT_EQ(ring_allreduce_ms(fabric, 0.0, 8), 0.0);
  // A host fabric the 4 GPUs share carries 4 x 1500 bytes: at 2000 B/ms it bounds the one-host ring at
  // 3 ms, or, where the ranks share the copying cores, adds its 3 ms to the ring's own 1.56 ms.
  fabric.host_bytes_per_ms = 2000.0;
  EXPECT_NEAR(ring_allreduce_ms(fabric, 1000.0, 4), 3.0, 1e-12);
  fabric.host_adds = true;
  EXPECT_NEAR(ring_allreduce_ms(fabric, 1000.0, 4), 1.56 + 3.0, 1e-12);
}

TEST(ShardingTypes, ParsesTheFlagAndNamesWhatIsWrong) {
  EXPECT_EQ(parse_sharding_types("all", "--sharding-types").bits, ShardingTypeSet::all().bits);
  ShardingTypeSet set = parse_sharding_types("column_wise,table_wise,row_wise", "--sharding-types");
  EXPECT_TRUE(set.allows(ShardingType::kRowWise));
  EXPECT_FALSE(set.allows(ShardingType::kDataParallel));
  EXPECT_EQ(sharding_types_string(set), "table_wise,column_wise,row_wise");
  EXPECT_FALSE(ShardingTypeSet::table_and_column().beyond_table_and_column());
  auto message = [](const char* list) {
    try {
      parse_sharding_types(list, "--sharding-types");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("table_wise,grid").find("unknown sharding type \"grid\""), std::string::npos);
  EXPECT_NE(message("table_wise,row_wise,row_wise").find("listed twice"), std::string::npos);
  EXPECT_NE(message("row_wise").find("must include table_wise"), std::string::npos);
  EXPECT_NE(message("").find("unknown sharding type \"\""), std::string::npos);
}

// One hot table whose 4 columns cannot be split, beside light ones: only row blocks spread its lookups.
std::vector<Table> one_hot_table() {
  std::vector<Table> tables{make_table("hot", 4'000'000, 4, 400.0)};
  for (int i = 0; i < 6; ++i) tables.push_back(make_table("light" + std::to_string(i), 10'000, 16, 2.0));
  return tables;
}

TEST(ShardingTypes, RowWiseWinsForOneHotTableOnManyGpus) {
  auto model = testing::analytic_model();
  std::vector<Table> tables = one_hot_table();
  Cluster cluster = cluster_of(16, 1ll << 30);
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  Plan narrow = make_neuroshard_planner(model, config)->plan(tables, cluster);
  config.sharding_types = parse_sharding_types("table_wise,column_wise,row_wise", "test");
  Plan wide = make_neuroshard_planner(model, config)->plan(tables, cluster);
  EXPECT_EQ(narrow.tables[0].type, ShardingType::kTableWise);
  EXPECT_EQ(wide.tables[0].type, ShardingType::kRowWise);
  const double before = max_total_ms(score_plan(narrow, tables, *model));
  const double after = max_total_ms(score_plan(wide, tables, *model));
  EXPECT_LT(after, 0.5 * before);
  ASSERT_TRUE(wide.search);
  EXPECT_GE(wide.search->converted, 1);
  ValidationResult result = validate(wide, tables);
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

// 2 GiB GPUs in hosts of 8, and the search's table- and column-wise plan on them: where the pass starts.
Cluster hosts_of_eight(int devices) {
  Cluster cluster = cluster_of(devices, 2ll << 30);
  cluster.devices_per_host = 8;
  return cluster;
}

Plan table_and_column_plan(const std::shared_ptr<const CostModel>& model, const std::vector<Table>& tables,
                           const Cluster& cluster) {
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  return make_neuroshard_planner(model, config)->plan(tables, cluster);
}

TEST(ShardingTypes, PassNeverWorsensFitsMemoryAndIgnoresThreads) {
  auto model = testing::analytic_model();
  std::vector<Table> tables = testing::varied_tables(60);
  tables.push_back(make_table("hot", 2'000'000, 4, 300.0));
  for (int devices : {8, 32}) {
    const Cluster cluster = hosts_of_eight(devices);
    Plan base = table_and_column_plan(model, tables, cluster);
    TypePassOptions options;
    options.threads = 1;
    Plan one = choose_sharding_types(base, tables, *model, options);
    options.threads = 3;
    Plan three = choose_sharding_types(base, tables, *model, options);
    EXPECT_EQ(plan_to_string(one), plan_to_string(three)) << devices;
    EXPECT_LE(max_total_ms(score_plan(one, tables, *model)), max_total_ms(score_plan(base, tables, *model)) + 1e-9);
    for (const auto& usage : device_usage(one)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
    ValidationResult result = validate(one, tables);
    EXPECT_TRUE(result.valid()) << devices << ": " << result.problems.front();
  }
}

TEST(ShardingTypes, PassesSharingAMemoEndAsPassesAlone) {
  // The search's plan and a greedy baseline's of the same tables, each through the pass alone and then
  // both through one memo, in either order: the memo only saves summarising a piece or conversion twice.
  auto model = testing::analytic_model();
  std::vector<Table> tables = testing::varied_tables(60);
  tables.push_back(make_table("hot", 2'000'000, 4, 300.0));
  tables.push_back(make_table("hotter", 4'000'000, 4, 600.0));
  for (int devices : {8, 32}) {
    const Cluster cluster = hosts_of_eight(devices);
    const Plan searched = table_and_column_plan(model, tables, cluster);
    PlannerConfig greedy = testing::planner_config();
    greedy.cost_model = model;
    const Plan plainer = make_planner("size_greedy", greedy)->plan(tables, cluster);
    ASSERT_NE(plan_layout_key(searched), plan_layout_key(plainer)) << devices;
    TypePassOptions options;
    TypePassStats stats;
    const std::string searched_alone = plan_to_string(choose_sharding_types(searched, tables, *model, options));
    const std::string plainer_alone = plan_to_string(choose_sharding_types(plainer, tables, *model, options, &stats));
    EXPECT_GE(stats.moves, 1) << devices;  // the pass has something to do
    for (bool searched_first : {true, false}) {
      options.memo = make_type_pass_memo();
      const Plan& first = searched_first ? searched : plainer;
      const Plan& second = searched_first ? plainer : searched;
      const std::string first_shared = plan_to_string(choose_sharding_types(first, tables, *model, options));
      const std::string second_shared = plan_to_string(choose_sharding_types(second, tables, *model, options));
      EXPECT_EQ(first_shared, searched_first ? searched_alone : plainer_alone) << devices;
      EXPECT_EQ(second_shared, searched_first ? plainer_alone : searched_alone) << devices;
    }
  }
}

// The analytic model with a row-wise charge that grows with the plan's summed row-wise width, as the
// fitted one does: the pass's running sum of that width must agree with score_plan's.
class WidthChargedModel final : public testing::ForwardingModel {
 public:
  using ForwardingModel::ForwardingModel;
  std::string name() const override { return "width-charged"; }
  double rowwise_collectives_ms(int64_t rw_dim, int num_devices) const override {
    return 0.001 * num_devices + 0.004 * static_cast<double>(rw_dim);
  }
};

// Narrow hot tables (4 columns, one per pooling factor) and light ones, planned table- and column-wise,
// then through the type pass with `types` allowed.
struct PassRun {
  std::vector<Table> tables;
  Plan base;
  Plan after;
  TypePassStats stats;
};

PassRun run_pass(const std::shared_ptr<const CostModel>& model, const std::vector<double>& hot_poolings,
                 int light_tables, const Cluster& cluster, const std::string& types) {
  PassRun run;
  for (double pooling : hot_poolings) {
    run.tables.push_back(make_table("hot" + std::to_string(run.tables.size()), 4'000'000, 4, pooling));
  }
  for (int i = 0; i < light_tables; ++i) run.tables.push_back(make_table("light" + std::to_string(i), 10'000, 16, 2.0));
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  run.base = make_neuroshard_planner(model, config)->plan(run.tables, cluster);
  TypePassOptions options;
  options.allowed = parse_sharding_types(types, "test");
  run.after = choose_sharding_types(run.base, run.tables, *model, options, &run.stats);
  return run;
}

TEST(ShardingTypes, PassTracksTheRowWiseWidthAsScoringDoes) {
  auto model = std::make_shared<WidthChargedModel>(testing::analytic_model());
  // Hot tables of unequal heat: each conversion relieves the slowest GPU down to the next hot table's.
  const PassRun run =
      run_pass(model, {400.0, 150.0, 60.0}, 6, cluster_of(16, 1ll << 30), "table_wise,column_wise,row_wise");
  const auto& [tables, base, after, stats] = run;
  int64_t row_wise_dim = 0;
  for (const auto& t : after.tables) row_wise_dim += t.type == ShardingType::kRowWise ? t.dim : 0;
  EXPECT_GE(stats.converted, 2);  // several row-wise tables: their widths add up in the charge
  EXPECT_GT(row_wise_dim, 4);
  const auto devices = device_shards(after, tables);
  EXPECT_EQ(devices.front().row_wise_dim, row_wise_dim);
  EXPECT_DOUBLE_EQ(plan_collectives_ms(*model, devices), 0.016 + 0.004 * static_cast<double>(row_wise_dim));
  const double scored = max_total_ms(score_plan(after, tables, *model));
  EXPECT_NEAR(stats.predicted_ms, scored, 1e-6 * scored);
  EXPECT_LE(max_total_ms(score_plan(after, tables, *model)), max_total_ms(score_plan(base, tables, *model)) + 1e-9);
}

// Table-row-wise tables reduce-scatter and all-gather within their host: the charge is that of the host's
// size and of the widest host's summed width, not of the plan's.
TEST(ShardingTypes, TableRowWiseTablesAddTheirHostsCollectives) {
  Cluster cluster = cluster_of(8, 1ll << 30);
  cluster.devices_per_host = 4;
  Table a = make_table("a", 4000, 16, 8.0);
  Table b = make_table("b", 4000, 12, 1.0);
  Table c = make_table("c", 4000, 20, 1.0);
  Table tw = make_table("tw", 1000, 8, 2.0);
  const std::vector<Table> tables{a, b, c, tw};
  Plan plan = plan_of(cluster, {table_row_wise_sharding(a, 0, 4), table_row_wise_sharding(b, 0, 4),
                                table_row_wise_sharding(c, 1, 4), table_wise_sharding(tw, 5)});
  const std::vector<DeviceShards> devices = device_shards(plan, tables);
  for (const auto& d : devices) {
    EXPECT_EQ(d.row_wise_dim, 0);
    EXPECT_EQ(d.host_row_wise_dim, 16 + 12);
    EXPECT_EQ(d.devices_per_host, 4);
  }
  auto model = std::make_shared<WidthChargedModel>(testing::analytic_model());
  EXPECT_DOUBLE_EQ(plan_collectives_ms(*model, devices), 0.004 + 0.004 * 28);
  // With row-wise tables too, each kind pays its own: over all 8 GPUs, and within the widest host.
  EXPECT_DOUBLE_EQ(extra_collectives_ms(*model, 0, 24, 8, 28, 4), (0.008 + 0.004 * 24) + (0.004 + 0.004 * 28));
  EXPECT_EQ(extra_collectives_ms(*model, 0, 0, 8, 28, 1), 0.0);
  const std::vector<DeviceCost> scored = score_plan(plan, tables, *model);
  std::vector<int64_t> widths;
  std::vector<double> ids;
  for (const auto& d : devices) {
    widths.push_back(d.dim_sum);
    ids.push_back(d.input_ids);
  }
  const std::vector<DeviceCost> plain =
      costs_from_compute(*model, model->predict_compute(compute_sets(devices)), widths, ids);
  for (std::size_t r = 0; r < scored.size(); ++r) EXPECT_NEAR(scored[r].bw_comm_ms, plain[r].bw_comm_ms + 0.116, 1e-9);

  // Timed as TorchRec runs them: each host reduce-scatters its own width among its ranks, then its ranks
  // send their share (width / 4, the remainder to the first) in the all-to-all.
  auto comm = comm_to_measure(plan, std::vector<std::optional<double>>(8, 1.0));
  ASSERT_TRUE(comm.has_value());
  EXPECT_EQ(comm->devices_per_host, 4);
  EXPECT_EQ(comm->host_rw_dims, (std::vector<int64_t>{28, 28, 28, 28, 20, 20, 20, 20}));
  EXPECT_EQ(comm->dim_sums, (std::vector<int64_t>{4 + 3, 4 + 3, 4 + 3, 4 + 3, 5, 5 + 8, 5, 5}));
  EXPECT_EQ(comm->rw_dim, 0);
  auto plain_comm =
      comm_to_measure(plan_of(cluster, {table_wise_sharding(tw, 5)}), std::vector<std::optional<double>>(8, 1.0));
  ASSERT_TRUE(plain_comm.has_value());
  EXPECT_TRUE(plain_comm->host_rw_dims.empty());
  EXPECT_EQ(plain_comm->devices_per_host, 0);
}

// The pass keeps each host's table-row-wise width as scoring counts it: with a charge that grows with
// the widest host's width, the plan it ends with is scored as the pass predicted, and no worse than before.
TEST(ShardingTypes, PassTracksEachHostsTableRowWiseWidth) {
  auto model = std::make_shared<WidthChargedModel>(testing::analytic_model());
  Cluster cluster = cluster_of(16, 1ll << 30);
  cluster.devices_per_host = 4;
  const PassRun run =
      run_pass(model, {400.0, 300.0, 200.0, 150.0}, 8, cluster, "table_wise,column_wise,table_row_wise");
  const auto& [tables, base, after, stats] = run;
  std::vector<int64_t> host_dims(4, 0);
  for (const auto& t : after.tables) {
    if (t.type == ShardingType::kTableRowWise) host_dims[static_cast<std::size_t>(t.shards.front().rank / 4)] += t.dim;
  }
  const int64_t widest = *std::max_element(host_dims.begin(), host_dims.end());
  EXPECT_GE(stats.converted, 2);
  const auto devices = device_shards(after, tables);
  EXPECT_EQ(devices.front().host_row_wise_dim, widest);
  EXPECT_DOUBLE_EQ(plan_collectives_ms(*model, devices), 0.004 + 0.004 * static_cast<double>(widest));
  const double scored = max_total_ms(score_plan(after, tables, *model));
  EXPECT_NEAR(stats.predicted_ms, scored, 1e-6 * scored);
  EXPECT_LE(max_total_ms(score_plan(after, tables, *model)), max_total_ms(score_plan(base, tables, *model)) + 1e-9);
  EXPECT_TRUE(validate(after, tables).valid());
}

// TorchRec distributes each sharding type's inputs and outputs in collectives of its own: every type
// with all-to-alls past the first adds its group to every device; data-parallel tables have none.
TEST(ShardingTypes, EachShardingTypeWithAllToAllsPastTheFirstAddsItsGroup) {
  const Cluster cluster = cluster_of(4, 1ll << 30);
  Table a = make_table("a", 4000, 16, 2.0);
  Table b = make_table("b", 4000, 16, 2.0);
  Table c = make_table("c", 4000, 16, 2.0);
  const std::vector<Table> tables{a, b, c};
  // b's columns halved between ranks 0 and 1.
  const TableSharding b_halves = sharding_of(b, {Shard{0, 0, 0, b.rows, 8}, Shard{1, 0, 8, b.rows, 8}});
  ASSERT_EQ(b_halves.type, ShardingType::kColumnWise);
  auto plain = testing::analytic_model();
  auto charged = std::make_shared<testing::GroupChargedModel>(plain, 2.5);
  auto extra_bw = [&](const Plan& plan) {
    const auto with = score_plan(plan, tables, *charged);
    const auto without = score_plan(plan, tables, *plain);
    for (std::size_t r = 1; r < with.size(); ++r)
      EXPECT_DOUBLE_EQ(with[r].bw_comm_ms - without[r].bw_comm_ms, with[0].bw_comm_ms - without[0].bw_comm_ms);
    return with[0].bw_comm_ms - without[0].bw_comm_ms;
  };
  const Plan table_wise =
      plan_of(cluster, {table_wise_sharding(a, 0), table_wise_sharding(b, 1), table_wise_sharding(c, 2)});
  EXPECT_EQ(device_shards(table_wise, tables).front().alltoall_groups, 1);
  EXPECT_NEAR(extra_bw(table_wise), 0.0, 1e-12);
  const Plan with_replica =
      plan_of(cluster, {table_wise_sharding(a, 0), table_wise_sharding(b, 1), data_parallel_sharding(c, 4)});
  EXPECT_EQ(device_shards(with_replica, tables).front().alltoall_groups, 1);
  EXPECT_NEAR(extra_bw(with_replica), 0.0, 1e-12);
  const Plan with_columns = plan_of(cluster, {table_wise_sharding(a, 0), b_halves, data_parallel_sharding(c, 4)});
  EXPECT_EQ(device_shards(with_columns, tables).front().alltoall_groups, 2);
  EXPECT_NEAR(extra_bw(with_columns), 2.5, 1e-12);
  const Plan three = plan_of(cluster, {table_wise_sharding(a, 0), b_halves, row_wise_sharding(c, 4)});
  EXPECT_NEAR(extra_bw(three), 5.0, 1e-12);
  EXPECT_EQ(alltoall_groups_ms(*charged, 3, 1), 0.0);  // one GPU runs no collectives
}

// The search splits a column only for more than the column-wise group it adds, and the type pass tracks
// the groups as scoring counts them.
TEST(ShardingTypes, ASearchPaysForTheGroupsItAdds) {
  const Cluster cluster = cluster_of(16, 1ll << 30);
  const std::string types = "table_wise,column_wise,row_wise";
  const PassRun free_groups = run_pass(testing::analytic_model(), {400.0, 150.0, 60.0}, 6, cluster, types);
  ShardingTypeSet used;
  for (const auto& t : free_groups.after.tables) used.add(t.type);
  ASSERT_GE(used.count(), 2);  // without a charge, the plan mixes types
  for (double group_ms : {0.05, 1e3}) {
    auto model = std::make_shared<testing::GroupChargedModel>(testing::analytic_model(), group_ms);
    const PassRun run = run_pass(model, {400.0, 150.0, 60.0}, 6, cluster, types);
    const double scored = max_total_ms(score_plan(run.after, run.tables, *model));
    EXPECT_NEAR(run.stats.predicted_ms, scored, 1e-6 * scored) << group_ms;
    EXPECT_LE(scored, max_total_ms(score_plan(run.base, run.tables, *model)) + 1e-9) << group_ms;
    if (group_ms < 1.0) continue;
    for (const auto& t : run.after.tables) EXPECT_EQ(t.type, ShardingType::kTableWise) << t.name;
  }
}

TEST(ShardingTypes, WithoutColumnWiseTheSearchSplitsNoColumns) {
  auto model = testing::analytic_model();
  std::vector<Table> tables = testing::varied_tables(40);
  NeuroShardConfig config;
  config.sharding_types = parse_sharding_types("table_wise,row_wise", "test");
  Plan plan = make_neuroshard_planner(model, config)->plan(tables, cluster_of(8, 4ll << 30));
  for (const auto& t : plan.tables) EXPECT_NE(t.type, ShardingType::kColumnWise) << t.name;
  // A table larger than a device needs column slices, which this set leaves out: it starts as row-wise
  // blocks, and without those either it is refused.
  std::vector<Table> huge{make_table("huge", 100'000'000, 64)};
  EXPECT_EQ(make_neuroshard_planner(model, config)->plan(huge, cluster_of(8, 4ll << 30)).tables[0].type,
            ShardingType::kRowWise);
  config.sharding_types = parse_sharding_types("table_wise", "test");
  EXPECT_THROW(make_neuroshard_planner(model, config)->plan(huge, cluster_of(8, 4ll << 30)), InfeasibleError);
}

}  // namespace
}  // namespace shardplan
