#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "grid_placement.hpp"
#include "placement_refinement.hpp"
#include "shard_catalog.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using testing::cluster_of;
using testing::make_table;
using testing::varied_tables;

// Every table whole, except every split_every-th halved (0: none), so that the sibling rule is exercised.
std::vector<Piece> pieces_of(const ShardCatalog& catalog, int tables, int split_every) {
  std::vector<Piece> pieces;
  for (int t = 0; t < tables; ++t) {
    int v = catalog.whole(t);
    if (split_every > 0 && t % split_every == 0 && catalog.splittable(v)) {
      const int first = catalog.first_half(v);
      pieces.push_back(Piece{first, 0});
      pieces.push_back(Piece{catalog.second_half(v), catalog.cols(first)});
    } else {
      pieces.push_back(Piece{v, 0});
    }
  }
  return pieces;
}

double rescored_max(const Placement& p, const std::vector<Piece>& pieces, const ShardCatalog& catalog,
                    const CostModel& model, int devices) {
  std::vector<std::vector<float>> sums(static_cast<std::size_t>(devices),
                                       std::vector<float>(static_cast<std::size_t>(catalog.summary_size()), 0.0f));
  std::vector<int64_t> width(static_cast<std::size_t>(devices), 0);
  std::vector<int> count(static_cast<std::size_t>(devices), 0);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto r = static_cast<std::size_t>(p.ranks[i]);
    const float* s = catalog.summary(pieces[i].variant);
    for (std::size_t k = 0; k < sums[r].size(); ++k) sums[r][k] += s[k];
    width[r] += catalog.cols(pieces[i].variant);
    ++count[r];
  }
  std::vector<double> compute;
  for (std::size_t r = 0; r < sums.size(); ++r)
    compute.push_back(count[r] ? model.compute_from_summary(sums[r].data()) : 0.0);
  std::vector<double> fw, bw;
  model.predict_comm(width, compute, fw, bw);
  double worst = 0.0;
  for (std::size_t r = 0; r < compute.size(); ++r) worst = std::max(worst, compute[r] + fw[r] + bw[r]);
  return worst;
}

TEST(PlacementRefinement, NeverWorseAndKeepsMemoryAndSiblingRules) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  int checked = 0;
  for (int devices : {2, 4, 16}) {
    for (int64_t memory : {int64_t{3} << 30, int64_t{64} << 30}) {
      auto tables = varied_tables(40);
      Cluster cluster = cluster_of(devices, memory);
      ShardCatalog catalog(tables, cluster, *model, 1);
      GridPlacer placer(catalog, *model, cluster, GridOptions{});
      std::vector<Piece> pieces = pieces_of(catalog, static_cast<int>(tables.size()), 5);
      Placement start = placer.place(pieces);
      if (!start.feasible) continue;
      ++checked;
      Placement refined = refine_placement(pieces, start, catalog, *model, cluster.usable_bytes_per_device());
      SCOPED_TRACE(::testing::Message() << devices << " devices, " << memory << " bytes");
      ASSERT_TRUE(refined.feasible);
      EXPECT_LE(refined.max_cost, start.max_cost * (1 + 1e-9));
      EXPECT_NEAR(refined.max_cost, rescored_max(refined, pieces, catalog, *model, devices), 1e-6 * refined.max_cost);
      std::vector<int64_t> bytes(static_cast<std::size_t>(devices), 0);
      std::set<std::pair<int, int>> table_on_device;
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        int r = refined.ranks[i];
        ASSERT_GE(r, 0);
        ASSERT_LT(r, devices);
        bytes[static_cast<std::size_t>(r)] += catalog.bytes(pieces[i].variant);
        EXPECT_TRUE(table_on_device.emplace(catalog.table(pieces[i].variant), r).second)
            << "two pieces of table " << catalog.table(pieces[i].variant) << " on device " << r;
      }
      for (int64_t b : bytes) EXPECT_LE(b, cluster.usable_bytes_per_device());
    }
  }
  EXPECT_GE(checked, 4) << "too few feasible cases to mean anything";
}

TEST(PlacementRefinement, SpreadsTablesPiledOnOneDevice) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  std::vector<Table> tables;
  for (int t = 0; t < 4; ++t) tables.push_back(make_table("t" + std::to_string(t), 100'000, 64, 20.0));
  Cluster cluster = cluster_of(4, int64_t{16} << 30);
  ShardCatalog catalog(tables, cluster, *model, 1);
  std::vector<Piece> pieces = pieces_of(catalog, 4, 0);
  Placement piled;
  piled.feasible = true;
  piled.ranks.assign(4, 0);
  piled.devices.assign(4, DeviceCost{});
  piled.max_cost = rescored_max(piled, pieces, catalog, *model, 4);
  Placement refined = refine_placement(pieces, piled, catalog, *model, cluster.usable_bytes_per_device());
  EXPECT_LT(refined.max_cost, 0.5 * piled.max_cost);
  EXPECT_EQ(std::set<int>(refined.ranks.begin(), refined.ranks.end()).size(), 4u) << "one table per device";
}

TEST(PlacementRefinement, SwapsWhenMemoryForbidsAMove) {
  // Each device holds exactly two of these tables: only swaps can improve {heavy, heavy} + {light, light}.
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  std::vector<Table> tables = {make_table("heavy0", 1'000'000, 64, 50.0), make_table("heavy1", 1'000'000, 64, 50.0),
                               make_table("light0", 1'000'000, 64, 1.0), make_table("light1", 1'000'000, 64, 1.0)};
  const int64_t table_bytes = shard_memory_bytes(1'000'000, 64, DType::kFp32, Optimizer::kSgd);
  Cluster cluster = cluster_of(2, 2 * table_bytes);
  ShardCatalog catalog(tables, cluster, *model, 1);
  std::vector<Piece> pieces = pieces_of(catalog, 4, 0);
  Placement start;
  start.feasible = true;
  start.ranks = {0, 0, 1, 1};
  start.devices.assign(2, DeviceCost{});
  start.max_cost = rescored_max(start, pieces, catalog, *model, 2);
  Placement refined = refine_placement(pieces, start, catalog, *model, cluster.usable_bytes_per_device());
  EXPECT_LT(refined.max_cost, start.max_cost);
  EXPECT_NE(refined.ranks[0], refined.ranks[1]) << "the heavy tables end up apart";
}

TEST(PlacementRefinement, LeavesAnInfeasiblePlacementAlone) {
  auto model = make_analytic_cost_model(AnalyticCostConfig{});
  auto tables = varied_tables(6);
  Cluster cluster = cluster_of(2, int64_t{16} << 30);
  ShardCatalog catalog(tables, cluster, *model, 1);
  std::vector<Piece> pieces = pieces_of(catalog, 6, 0);
  Placement infeasible;
  infeasible.ranks.assign(6, -1);
  Placement out = refine_placement(pieces, infeasible, catalog, *model, cluster.usable_bytes_per_device());
  EXPECT_FALSE(out.feasible);
  EXPECT_EQ(out.ranks, infeasible.ranks);
}

// A deadline on a clock of its own that moves one second per poll: it passes at poll `n`, and `polls`
// counts them. No wall-clock time is involved, so the test is deterministic.
Deadline after_polls(int n, const std::shared_ptr<int>& polls) {
  const Deadline::Clock::time_point zero{};
  return Deadline(zero + std::chrono::seconds(n), [polls, zero] { return zero + std::chrono::seconds(++*polls); });
}

// 600 one-column tables on two devices: one round lists 2 x 300 x 301 moves and swaps, several batches.
struct ManyPieces {
  std::shared_ptr<const CostModel> model = make_analytic_cost_model(AnalyticCostConfig{});
  std::vector<Table> tables;
  Cluster cluster = cluster_of(2, int64_t{64} << 30);
  std::unique_ptr<ShardCatalog> catalog;
  std::vector<Piece> pieces;
  Placement start;

  ManyPieces() {
    for (int t = 0; t < 600; ++t) tables.push_back(make_table("t" + std::to_string(t), 1 + t, 4, 1.0 + t % 7));
    catalog = std::make_unique<ShardCatalog>(tables, cluster, *model, 1);
    pieces = pieces_of(*catalog, 600, 0);
    start.feasible = true;
    for (int t = 0; t < 600; ++t) start.ranks.push_back(t < 450 ? 0 : 1);  // lopsided: moves pay
    start.devices.assign(2, DeviceCost{});
    start.max_cost = rescored_max(start, pieces, *catalog, *model, 2);
  }

  Placement refine(RefineOptions options, RefineStats& stats) const {
    return refine_placement(pieces, start, *catalog, *model, cluster.usable_bytes_per_device(), options, &stats);
  }
};

TEST(PlacementRefinement, PollsTheDeadlineInsideARoundAndStopsThere) {
  ManyPieces task;
  auto polls = std::make_shared<int>(0);
  RefineOptions options;
  options.deadline = after_polls(3, polls);  // before the round, after its first batch, after its second
  RefineStats stats;
  Placement cut = task.refine(options, stats);
  EXPECT_TRUE(stats.cut_short);
  EXPECT_EQ(*polls, 3) << "stopped at the poll where the deadline passed, inside the first round";
  EXPECT_LE(stats.rounds, 1);
  EXPECT_LE(cut.max_cost, task.start.max_cost);
}

TEST(PlacementRefinement, ADeadlineNotReachedChangesNothing) {
  ManyPieces task;
  RefineOptions plain;
  plain.max_rounds = 3;
  RefineStats plain_stats;
  const Placement expected = task.refine(plain, plain_stats);
  auto polls = std::make_shared<int>(0);
  RefineOptions timed = plain;
  timed.deadline = after_polls(1'000'000, polls);
  RefineStats timed_stats;
  const Placement got = task.refine(timed, timed_stats);
  EXPECT_EQ(got.ranks, expected.ranks);
  EXPECT_EQ(got.max_cost, expected.max_cost);
  EXPECT_FALSE(timed_stats.cut_short);
  EXPECT_GT(*polls, timed_stats.rounds) << "polled between batches, not only between rounds";
}

}  // namespace
}  // namespace shardplan
