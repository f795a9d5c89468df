#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "grid_placement.hpp"
#include "shard_catalog.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/search/neuroshard_planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;
using testing::varied_tables;

std::shared_ptr<const CostModel> analytic() { return testing::analytic_model(); }

double plan_cost(const Plan& plan, const std::vector<Table>& tables, const CostModel& model) {
  double worst = 0.0;
  for (const auto& d : score_plan(plan, tables, model)) worst = std::max(worst, d.total_ms());
  return worst;
}

Plan plan_with(const std::vector<Table>& tables, const Cluster& cluster, NeuroShardConfig config) {
  return make_neuroshard_planner(analytic(), config)->plan(tables, cluster);
}

// Feasibility first: a 4-column table larger than a device starts as row-wise blocks, and the search places
// the others in the memory the blocks leave; a table that may not be row-wise is still refused by name.
TEST(NeuroShard, ATableOnlyRowBlocksHoldStartsRowWise) {
  auto tables = varied_tables(30);
  tables.push_back(make_table("narrow", 3'000'000'000, 4, 2.0));  // 48 GB of fp32 weights over 8 x 16 GiB
  const Cluster cluster = cluster_of(8, 16ll << 30);
  const Plan plan = plan_with(tables, cluster, NeuroShardConfig{});
  EXPECT_EQ(plan.tables.back().type, ShardingType::kRowWise);
  EXPECT_EQ(plan.tables.back().shards.size(), 8u);
  const auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
  NeuroShardConfig columns_only;
  columns_only.sharding_types = ShardingTypeSet::table_and_column();
  try {
    plan_with(tables, cluster, columns_only);
    ADD_FAILURE() << "planned a table no device holds without row-wise blocks";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("\"narrow\""), std::string::npos) << e.what();
  }
}

TEST(NeuroShard, PlansAreValidAndFitMemory) {
  auto tables = varied_tables(80);
  for (int devices : {4, 8, 64}) {
    Cluster cluster = cluster_of(devices, 8ll << 30);
    Plan plan = plan_with(tables, cluster, {});
    auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
    EXPECT_TRUE(result.valid()) << devices << ": " << result.problems.front();
    for (const auto& usage : device_usage(plan)) EXPECT_LE(usage.memory_bytes, cluster.usable_bytes_per_device());
  }
}

TEST(NeuroShard, SameForAnyThreadCount) {
  auto tables = varied_tables(120);
  Cluster cluster = cluster_of(16, 8ll << 30);
  NeuroShardConfig config;
  config.threads = 1;
  std::string one = plan_to_string(plan_with(tables, cluster, config));
  for (int threads : {2, 3, 8}) {
    config.threads = threads;
    EXPECT_EQ(plan_to_string(plan_with(tables, cluster, config)), one) << threads << " threads";
  }
}

TEST(NeuroShard, SearchIsNeverWorseThanNoSplits) {
  auto model = analytic();
  for (int count : {12, 40, 90}) {
    auto tables = varied_tables(count);
    Cluster cluster = cluster_of(8, 8ll << 30);
    ShardCatalog catalog(tables, cluster, *model, 1);
    GridPlacer placer(catalog, *model, cluster, GridOptions{});
    std::vector<Piece> whole;
    for (int t = 0; t < count; ++t) whole.push_back(Piece{catalog.whole(t), 0});
    Placement unsplit = placer.place(whole);
    ASSERT_TRUE(unsplit.feasible);
    double searched = plan_cost(plan_with(tables, cluster, {}), tables, *model);
    EXPECT_LE(searched, unsplit.max_cost * (1 + 1e-6)) << count << " tables";
  }
}

TEST(GridPlacer, PlacesEveryGridPointAsIfAlone) {
  // place() resumes each grid point from where the smaller cap before it first turned a piece away;
  // place_at() places one point from scratch. The best over the points must be the same placement.
  auto model = analytic();
  int capped_best = 0;
  for (int devices : {4, 8, 40}) {  // 40: the device index's trees rather than its scan
    for (int count : {12, 40, 90}) {
      auto tables = varied_tables(count);
      Cluster cluster = cluster_of(devices, 8ll << 30);
      ShardCatalog catalog(tables, cluster, *model, 1);
      GridOptions grid;
      GridPlacer placer(catalog, *model, cluster, grid);
      // Every third table in pieces that keep apart: halved, and its first half halved again where it
      // can be, so a table's pieces of two widths sit apart in the placement order (on both sides of
      // where a grid point resumes).
      std::vector<Piece> pieces;
      for (int t = 0; t < count; ++t) {
        const int v = catalog.whole(t);
        if (t % 3 != 0 || !catalog.splittable(v)) {
          pieces.push_back(Piece{v, 0});
          continue;
        }
        const int first = catalog.first_half(v);
        if (catalog.splittable(first)) {
          pieces.push_back(Piece{catalog.first_half(first), 0});
          pieces.push_back(Piece{catalog.second_half(first), catalog.cols(catalog.first_half(first))});
        } else {
          pieces.push_back(Piece{first, 0});
        }
        pieces.push_back(Piece{catalog.second_half(v), catalog.cols(first)});
      }
      Placement best;
      for (int k = 0; k < grid.points; ++k) {
        const double s = grid.min + (grid.max - grid.min) * k / (grid.points - 1);
        Placement alone = placer.place_at(pieces, s);
        if (better_placement(alone, best)) best = alone;
      }
      Placement placed = placer.place(pieces);
      ASSERT_TRUE(placed.feasible);
      EXPECT_EQ(placed.ranks, best.ranks) << devices << " devices, " << count << " tables";
      EXPECT_EQ(placed.max_cost, best.max_cost) << devices << " devices, " << count << " tables";
      EXPECT_EQ(placed.width_cap_multiplier, best.width_cap_multiplier);
      capped_best += best.width_cap_multiplier > grid.min;
    }
  }
  EXPECT_GT(capped_best, 0);  // some best placements come from a resumed grid point
}

TEST(NeuroShard, RefinementNeverMakesThePlanWorse) {
  auto model = analytic();
  for (int count : {10, 60}) {
    auto tables = varied_tables(count);
    Cluster cluster = cluster_of(4, 16ll << 30);
    NeuroShardConfig unrefined;
    unrefined.refine_rounds = 0;
    double without = plan_cost(plan_with(tables, cluster, unrefined), tables, *model);
    double with = plan_cost(plan_with(tables, cluster, {}), tables, *model);
    EXPECT_LE(with, without * (1 + 1e-9)) << count << " tables";
  }
}

// Brute force over every column split (halvings) and every placement of a tiny instance.
double brute_force_best(const std::vector<Table>& tables, int devices, const CostModel& model) {
  // Each table: whole, or halved once (pieces on different devices) when it has at least 8 columns.
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> splits(tables.size(), 0);
  std::function<void(std::size_t)> choose_splits = [&](std::size_t t) {
    if (t == tables.size()) {
      std::vector<std::pair<std::size_t, int>> pieces;  // (table, cols)
      for (std::size_t i = 0; i < tables.size(); ++i) {
        if (splits[i]) {
          // Halves that are multiples of 4, the wider first: 64 -> 32 + 32, 108 -> 56 + 52.
          const int second = tables[i].dim / 8 * 4;
          pieces.push_back({i, tables[i].dim - second});
          pieces.push_back({i, second});
        } else {
          pieces.push_back({i, tables[i].dim});
        }
      }
      std::vector<int> ranks(pieces.size(), 0);
      std::function<void(std::size_t)> place = [&](std::size_t p) {
        if (p == pieces.size()) {
          std::vector<std::vector<ShardFeatures>> sets(static_cast<std::size_t>(devices));
          std::vector<int64_t> widths(static_cast<std::size_t>(devices), 0);
          for (std::size_t k = 0; k < pieces.size(); ++k) {
            sets[static_cast<std::size_t>(ranks[k])].push_back(
                shard_features(tables[pieces[k].first], pieces[k].second));
            widths[static_cast<std::size_t>(ranks[k])] += pieces[k].second;
          }
          auto compute = model.predict_compute(sets);
          std::vector<double> fw, bw;
          model.predict_comm(widths, compute, fw, bw);
          double worst = 0.0;
          for (int r = 0; r < devices; ++r) {
            auto ru = static_cast<std::size_t>(r);
            worst = std::max(worst, compute[ru] + fw[ru] + bw[ru]);
          }
          best = std::min(best, worst);
          return;
        }
        for (int r = 0; r < devices; ++r) {
          ranks[p] = r;
          place(p + 1);
        }
      };
      place(0);
      return;
    }
    choose_splits(t + 1);
    if (tables[t].dim >= 8) {
      splits[t] = 1;
      choose_splits(t + 1);
      splits[t] = 0;
    }
  };
  choose_splits(0);
  return best;
}

TEST(NeuroShard, FindsTheBruteForceOptimumOfATinyInstance) {
  // One hot wide table and two light ones on two devices: the optimum halves the hot table.
  std::vector<Table> tables = {make_table("hot", 10'000, 64, 60.0), make_table("a", 1'000, 16, 5.0),
                               make_table("b", 1'000, 16, 5.0)};
  auto model = analytic();
  Cluster cluster = cluster_of(2, 1ll << 30);
  double optimum = brute_force_best(tables, 2, *model);
  // The brute force covers table- and column-wise plans; the other types may only do better.
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  Plan plan = make_neuroshard_planner(model, config)->plan(tables, cluster);
  EXPECT_NEAR(plan_cost(plan, tables, *model), optimum, 1e-6 * optimum);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kColumnWise);
  Plan any_type = make_neuroshard_planner(model, {})->plan(tables, cluster);
  EXPECT_LE(plan_cost(any_type, tables, *model), optimum * (1 + 1e-9));
}

TEST(NeuroShard, SplitsATableLargerThanAnyDevice) {
  // 512 MB table on 200 MB devices: table-wise planners refuse it, the search splits it into four.
  std::vector<Table> tables = {make_table("huge", 1'000'000, 128), make_table("small", 1000, 8)};
  Cluster cluster = cluster_of(4, 200'000'000);
  Plan plan = plan_with(tables, cluster, {});
  EXPECT_EQ(plan.tables[0].type, ShardingType::kColumnWise);
  EXPECT_GE(plan.tables[0].shards.size(), 4u);
  auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

TEST(ShardCatalog, HalvesEveryWidthOfAtLeast8IntoMultiplesOf4ThatTileIt) {
  std::vector<Table> tables;
  for (int dim : {4, 8, 12, 20, 84, 108, 128}) tables.push_back(make_table("d" + std::to_string(dim), 1000, dim));
  ShardCatalog catalog(tables, cluster_of(2, 1ll << 30), *analytic(), 1);
  EXPECT_EQ(ShardCatalog::first_half_cols(108), 56);
  EXPECT_EQ(ShardCatalog::second_half_cols(108), 52);
  EXPECT_EQ(ShardCatalog::first_half_cols(64), 32);
  EXPECT_EQ(ShardCatalog::second_half_cols(12), 4);
  for (int t = 0; t < catalog.num_tables(); ++t) {
    // Walk every halving from the whole table: each splits into two narrower multiples of 4 of the same
    // table that add up to it, down to 4 columns.
    std::vector<int> open{catalog.whole(t)};
    int narrowest = tables[static_cast<std::size_t>(t)].dim;
    while (!open.empty()) {
      const int v = open.back();
      open.pop_back();
      EXPECT_EQ(catalog.table(v), t);
      EXPECT_EQ(catalog.cols(v) % 4, 0);
      narrowest = std::min(narrowest, catalog.cols(v));
      EXPECT_EQ(catalog.splittable(v), catalog.cols(v) >= 8) << catalog.cols(v);
      if (!catalog.splittable(v)) continue;
      const int first = catalog.first_half(v), second = catalog.second_half(v);
      EXPECT_EQ(catalog.cols(first) + catalog.cols(second), catalog.cols(v));
      EXPECT_GE(catalog.cols(first), catalog.cols(second));
      EXPECT_LE(catalog.cols(first) - catalog.cols(second), 4);
      open.push_back(first);
      open.push_back(second);
    }
    EXPECT_EQ(narrowest, 4);
  }
}

TEST(NeuroShard, SplitsAHotTableOf4Mod8Columns) {
  // One hot table of 108 columns (27 x 4: no even halving into multiples of 4) beside light ones on two
  // devices: halving it unevenly (56 + 52) is what balances them.
  std::vector<Table> tables = {make_table("hot", 10'000, 108, 60.0), make_table("a", 1'000, 16, 5.0),
                               make_table("b", 1'000, 16, 5.0)};
  auto model = analytic();
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  Plan plan = make_neuroshard_planner(model, config)->plan(tables, cluster_of(2, 1ll << 30));
  ASSERT_EQ(plan.tables[0].type, ShardingType::kColumnWise);
  std::vector<int> widths;
  for (const auto& shard : plan.tables[0].shards) widths.push_back(shard.cols);
  EXPECT_EQ(widths, (std::vector<int>{56, 52}));
  double optimum = brute_force_best(tables, 2, *model);
  EXPECT_NEAR(plan_cost(plan, tables, *model), optimum, 1e-6 * optimum);
  auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

// The first split adds TorchRec's column-wise group of collectives to the step: the search splits only
// when that pays. Here halving the hot table saves about 0.2 ms of the analytic model's cost.
TEST(NeuroShard, SplitsOnlyWhenTheGainPaysForTheColumnWiseGroup) {
  std::vector<Table> tables = {make_table("hot", 10'000, 108, 60.0), make_table("a", 1'000, 16, 5.0),
                               make_table("b", 1'000, 16, 5.0)};
  NeuroShardConfig whole;
  whole.sharding_types = parse_sharding_types("table_wise", "test");
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  auto cost_of = [&](const NeuroShardConfig& c) {
    return plan_cost(make_neuroshard_planner(analytic(), c)->plan(tables, cluster_of(2, 1ll << 30)), tables,
                     *analytic());
  };
  const double unsplit = cost_of(whole);
  const double split = cost_of(config);
  ASSERT_LT(split, unsplit);
  for (double group_ms : {0.25 * (unsplit - split), 2.0 * (unsplit - split)}) {
    auto model = std::make_shared<testing::GroupChargedModel>(analytic(), group_ms);
    Plan plan = make_neuroshard_planner(model, config)->plan(tables, cluster_of(2, 1ll << 30));
    const bool pays = group_ms < unsplit - split;
    EXPECT_EQ(plan.tables[0].type, pays ? ShardingType::kColumnWise : ShardingType::kTableWise) << group_ms;
    EXPECT_NEAR(plan_cost(plan, tables, *model), pays ? split + group_ms : unsplit, 1e-6 * unsplit) << group_ms;
  }
}

TEST(NeuroShard, SplitsATableOf4Mod8ColumnsLargerThanAnyDevice) {
  // 437 MB of 84 columns on 200 MB devices: pieces of 44 + 40 columns (229 and 208 MB) are still too
  // large, so the search starts from four pieces (24 + 20 + 20 + 20), each fitting.
  std::vector<Table> tables = {make_table("huge", 1'300'000, 84), make_table("small", 1000, 8)};
  Plan plan = plan_with(tables, cluster_of(4, 200'000'000), {});
  ASSERT_EQ(plan.tables[0].type, ShardingType::kColumnWise);
  int cols = 0;
  for (const auto& shard : plan.tables[0].shards) {
    cols += shard.cols;
    EXPECT_LE(shard.cols, 24);
  }
  EXPECT_EQ(cols, 84);
  auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

TEST(NeuroShard, SolvesAClusterFilledToTheBrim) {
  // Three 60 MB tables on two 100 MB devices: no table-wise packing exists, halving one does.
  std::vector<Table> tables = {make_table("a", 1'875'000, 8), make_table("b", 1'875'000, 8),
                               make_table("c", 1'875'000, 8)};
  Plan plan = plan_with(tables, cluster_of(2, 100'000'000), {});
  auto result = validate_plan_json(nlohmann::json::parse(plan_to_string(plan)), tables, "plan");
  EXPECT_TRUE(result.valid()) << result.problems.front();
}

TEST(NeuroShard, RefusesWhatNoSplitCanHoldWithoutRowWise) {
  std::vector<Table> tables = {make_table("narrow", 100'000'000, 4)};  // 1.6 GB, cannot be halved
  NeuroShardConfig config;
  config.sharding_types = ShardingTypeSet::table_and_column();
  try {
    plan_with(tables, cluster_of(4, 1ll << 30), config);
    FAIL() << "expected infeasible";
  } catch (const InfeasibleError& e) {
    EXPECT_NE(std::string(e.what()).find("\"narrow\""), std::string::npos) << e.what();
  }
}

TEST(NeuroShard, RejectsBadParameters) {
  NeuroShardConfig config;
  config.beam_width = 0;
  EXPECT_THROW(make_neuroshard_planner(analytic(), config), InputError);
  config = {};
  config.grid_max = 0.5;
  EXPECT_THROW(make_neuroshard_planner(analytic(), config), InputError);
  config = {};
  config.refine_rounds = -1;
  EXPECT_THROW(make_neuroshard_planner(analytic(), config), InputError);
  EXPECT_THROW(make_neuroshard_planner(nullptr, {}), InputError);
}

TEST(NeuroShard, StepBudgetGrowsWithTheCluster) {
  EXPECT_EQ(auto_split_steps(30, 4), 10);
  EXPECT_EQ(auto_split_steps(856, 128), 128);
  EXPECT_EQ(auto_split_steps(60, 128), 60);
}

}  // namespace
}  // namespace shardplan
