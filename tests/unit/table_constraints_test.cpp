// Per-table constraints (the tables file's sharding_types and ranks): parsed with their paths, checked
// against the cluster, honoured by every planner, and checked by the validator.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/core/validate.hpp"
#include "shardplan/planners/planner.hpp"
#include "test_tables.hpp"

namespace shardplan {
namespace {

using json = nlohmann::json;
using testing::cluster_of;
using testing::make_table;
using testing::varied_tables;

std::string parse_error(const json& table) {
  try {
    parse_tables(json::array({table}), "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

ShardingTypeSet types_of(std::initializer_list<ShardingType> list) {
  ShardingTypeSet set;
  for (ShardingType t : list) set.add(t);
  return set;
}

TEST(TableConstraints, ParsedSortedAndWrittenBack) {
  auto tables = parse_tables(
      json::array({{{"name", "a"}, {"rows", 10}, {"dim", 8}, {"sharding_types", {"column_wise", "row_wise"}}},
                   {{"name", "b"}, {"rows", 10}, {"dim", 8}, {"ranks", {3, 1}}},
                   {{"name", "c"}, {"rows", 10}, {"dim", 8}}}),
      "t.json");
  EXPECT_EQ(tables[0].constraints.sharding_types, types_of({ShardingType::kColumnWise, ShardingType::kRowWise}));
  EXPECT_FALSE(tables[0].constraints.pinned());
  // A pinned table is table- or column-wise.
  EXPECT_EQ(tables[1].constraints.ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(tables[1].constraints.sharding_types, ShardingTypeSet::table_and_column());
  EXPECT_TRUE(tables[1].constraints.allows_rank(3));
  EXPECT_FALSE(tables[1].constraints.allows_rank(2));
  EXPECT_FALSE(tables[2].constraints.any());
  EXPECT_TRUE(tables[2].constraints.allows_rank(7));
  const json written = table_to_json(tables[0]);
  EXPECT_EQ(written["sharding_types"], json({"column_wise", "row_wise"}));
  EXPECT_FALSE(written.contains("ranks"));
  EXPECT_EQ(table_to_json(tables[1])["ranks"], json({1, 3}));
  EXPECT_FALSE(table_to_json(tables[2]).contains("sharding_types"));
}

TEST(TableConstraints, BadConstraintsNameTheirPathAndValue) {
  const json base = {{"rows", 10}, {"dim", 8}};
  auto with = [&](const char* key, json value) {
    json t = base;
    t[key] = std::move(value);
    return parse_error(t);
  };
  EXPECT_NE(with("sharding_types", {"table_wise", "sideways"}).find("tables[0].sharding_types[1]: must be one of"),
            std::string::npos);
  EXPECT_NE(with("sharding_types", {"row_wise", "row_wise"}).find("tables[0].sharding_types[1]: is listed twice"),
            std::string::npos);
  EXPECT_NE(with("sharding_types", json::array()).find("tables[0].sharding_types: must list at least one"),
            std::string::npos);
  EXPECT_NE(with("sharding_types", "table_wise").find("tables[0].sharding_types: must be an array"), std::string::npos);
  EXPECT_NE(with("ranks", {0, 0}).find("tables[0].ranks: lists a rank twice"), std::string::npos);
  EXPECT_NE(with("ranks", {-1}).find("tables[0].ranks[0]"), std::string::npos);
  EXPECT_NE(with("ranks", json::array()).find("tables[0].ranks: must list at least one rank"), std::string::npos);
  json pinned_rows = base;
  pinned_rows["ranks"] = {0};
  pinned_rows["sharding_types"] = {"row_wise"};
  EXPECT_NE(parse_error(pinned_rows)
                .find("tables[0].sharding_types: must be table_wise or column_wise for a table with ranks"),
            std::string::npos);
}

TEST(TableConstraints, CheckedAgainstTheClusterAndThePlansTypes) {
  Table pinned = make_table("p", 100, 8);
  pinned.constraints.ranks = {4};
  EXPECT_NO_THROW(check_table_constraints({pinned}, 5, ShardingTypeSet::all()));
  try {
    check_table_constraints({pinned}, 4, ShardingTypeSet::all());
    FAIL() << "rank 4 of 4 devices was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("table \"p\": ranks: rank 4 is not a device"), std::string::npos) << e.what();
  }
  Table rows_only = make_table("r", 100, 8);
  rows_only.constraints.sharding_types = types_of({ShardingType::kRowWise});
  EXPECT_THROW(check_table_constraints({rows_only}, 4, ShardingTypeSet::table_and_column()), InputError);
  EXPECT_EQ(table_sharding_types(rows_only, ShardingTypeSet::all()), types_of({ShardingType::kRowWise}));
}

// Constraints on a varied set: pins, column-wise only, table-wise only.
std::vector<Table> constrained_tables() {
  auto tables = varied_tables(40);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    TableConstraints& c = tables[i].constraints;
    if (i % 5 == 0) c.ranks = {static_cast<int>(i % 3)};
    if (i % 5 == 1) c.ranks = {1, 3};
    if (i % 5 == 0 || i % 5 == 1) c.sharding_types = ShardingTypeSet::table_and_column();
    if (i % 7 == 2) c.sharding_types = types_of({ShardingType::kColumnWise});
    if (i % 7 == 3) c.sharding_types = types_of({ShardingType::kTableWise});
  }
  return tables;
}

class EveryPlannerHonours : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPlannerHonours, PinsAndTypes) {
  const auto tables = constrained_tables();
  for (int devices : {4, 8}) {
    const Plan plan =
        make_planner(GetParam(), testing::planner_config(3))->plan(tables, cluster_of(devices, 16ll << 30));
    EXPECT_EQ(constraint_violation(plan, tables), "") << GetParam() << " on " << devices;
    const auto result = validate_plan_json(json::parse(plan_to_string(plan)), tables, "plan");
    EXPECT_TRUE(result.valid()) << GetParam() << " on " << devices << ": " << result.problems.front();
    for (std::size_t i = 0; i < tables.size(); ++i) {
      if (tables[i].constraints.sharding_types == types_of({ShardingType::kColumnWise})) {
        EXPECT_EQ(plan.tables[i].type, ShardingType::kColumnWise) << tables[i].name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Planners, EveryPlannerHonours, ::testing::ValuesIn(planner_names()));

TEST(TableConstraints, TorchRecsImitationsKeepToThePlansShardingTypes) {
  // As TorchRec given only some sharders: the plan's sharding types bound every table's, as its own do.
  auto tables = varied_tables(30);
  for (int i = 0; i < 4; ++i) tables.push_back(make_table("hot" + std::to_string(i), 4'000'000, 4, 300.0));
  const Cluster cluster = cluster_of(8, 16ll << 30);
  PlannerConfig config = testing::planner_config(1);
  auto uses_only = [](const Plan& plan, ShardingTypeSet types) {
    return std::all_of(plan.tables.begin(), plan.tables.end(),
                       [&](const TableSharding& t) { return types.allows(t.type); });
  };
  const Plan unrestricted = make_planner("torchrec_all_types", config)->plan(tables, cluster);
  ASSERT_FALSE(uses_only(unrestricted, ShardingTypeSet::table_and_column()));  // it would use other types here
  const ShardingTypeSet cpu_types =
      types_of({ShardingType::kTableWise, ShardingType::kColumnWise, ShardingType::kDataParallel});
  for (ShardingTypeSet types : {cpu_types, types_of({ShardingType::kTableWise})}) {
    config.neuroshard.sharding_types = types;
    for (const char* name : {"torchrec", "torchrec_cw32", "torchrec_all_types"}) {
      const Plan plan = make_planner(name, config)->plan(tables, cluster);
      EXPECT_TRUE(uses_only(plan, types)) << name << " with " << sharding_types_string(types);
    }
  }
}

TEST(TableConstraints, ATableOfRowBlocksOnlyIsPlannedByTheTypesThatHoldIt) {
  auto tables = varied_tables(12);
  tables[0].constraints.sharding_types = types_of({ShardingType::kRowWise});
  tables[1].constraints.sharding_types = types_of({ShardingType::kTableRowWise});
  Cluster cluster = cluster_of(8, 16ll << 30);
  cluster.devices_per_host = 4;
  const Plan plan = make_planner("neuroshard", testing::planner_config(1))->plan(tables, cluster);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  EXPECT_EQ(plan.tables[1].type, ShardingType::kTableRowWise);
  EXPECT_EQ(constraint_violation(plan, tables), "");
  // Planners that place tables whole refuse it, naming the table.
  for (const char* whole : {"torchrec", "random", "size_greedy"}) {
    try {
      make_planner(whole, testing::planner_config(1))->plan(tables, cluster);
      ADD_FAILURE() << whole << " planned a row-wise-only table";
    } catch (const InfeasibleError& e) {
      EXPECT_NE(std::string(e.what()).find(tables[0].name), std::string::npos) << e.what();
    }
  }
}

TEST(TableConstraints, PinnedTablesLargerThanTheirRanksAreInfeasibleByName) {
  // Two 10 GiB tables pinned to one 16 GiB device (fp32, sgd: rows x dim x 4 bytes).
  auto big = [](const char* name) {
    Table t = make_table(name, 10ll << 25, 8);
    t.constraints.ranks = {2};
    t.constraints.sharding_types = ShardingTypeSet::table_and_column();
    return t;
  };
  const std::vector<Table> tables = {big("left"), big("right"), make_table("free", 1000, 8)};
  for (const std::string& planner : planner_names()) {
    try {
      make_planner(planner, testing::planner_config(1))->plan(tables, cluster_of(4, 16ll << 30));
      ADD_FAILURE() << planner << " planned tables larger than their pinned rank";
    } catch (const InfeasibleError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("pinned to ranks [2] (\"left\", \"right\")"), std::string::npos) << planner << ": " << what;
    }
  }
}

TEST(TableConstraints, ValidatorNamesAShardOffItsRanksAndAForbiddenType) {
  auto tables = varied_tables(3);
  const Plan plan = make_planner("size_greedy", testing::planner_config(0))->plan(tables, cluster_of(4, 16ll << 30));
  const int rank = plan.tables[0].shards[0].rank;
  tables[0].constraints.ranks = {(rank + 1) % 4};
  tables[1].constraints.sharding_types = types_of({ShardingType::kColumnWise});
  const auto result = validate_plan_json(json::parse(plan_to_string(plan)), tables, "plan");
  ASSERT_EQ(result.problems.size(), 2u);
  EXPECT_NE(result.problems[0].find("tables[0].shards[0].rank: " + std::to_string(rank) + " is not among"),
            std::string::npos)
      << result.problems[0];
  EXPECT_NE(result.problems[1].find("tables[1].sharding_type: table \"" + tables[1].name +
                                    "\" is table_wise, but the tables "
                                    "file allows it only column_wise"),
            std::string::npos)
      << result.problems[1];
  EXPECT_NE(constraint_violation(plan, tables), "");
}

}  // namespace
}  // namespace shardplan
