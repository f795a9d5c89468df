#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/tables_io.hpp"

namespace shardplan {
namespace {

using nlohmann::json;

std::string parse_error(const json& doc) {
  try {
    parse_tables(doc, "tables.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TablesIo, ParsesArrayAndObjectFormsWithDefaults) {
  json table = {{"rows", 1000}, {"dim", 64}};
  auto from_array = parse_tables(json::array({table, table}), "t.json");
  auto from_object = parse_tables(json{{"tables", json::array({table, table})}}, "t.json");
  ASSERT_EQ(from_array.size(), 2u);
  ASSERT_EQ(from_object.size(), 2u);
  EXPECT_EQ(from_array[0].name, "t0");
  EXPECT_EQ(from_array[1].name, "t1");
  EXPECT_EQ(from_array[0].rows, 1000);
  EXPECT_EQ(from_array[0].dim, 64);
  EXPECT_DOUBLE_EQ(from_array[0].pooling_factor, 1.0);
  EXPECT_EQ(from_array[0].dtype, DType::kFp32);
  EXPECT_FALSE(from_array[0].reuse_hist.has_value());
  EXPECT_EQ(from_object[1].name, "t1");
}

TEST(TablesIo, AcceptsTorchRecAliasesAndAllFields) {
  json hist = json::array();
  for (int i = 0; i < kReuseBins; ++i) hist.push_back(i == 0 ? 3.0 : (i == 1 ? 1.0 : 0.0));
  auto tables = parse_tables(json::array({{{"name", "ads"},
                                           {"num_embeddings", 5000000},
                                           {"embedding_dim", 128},
                                           {"pooling_factor", 12.5},
                                           {"reuse_hist", hist},
                                           {"dtype", "fp16"}}}),
                             "t.json");
  const Table& t = tables.at(0);
  EXPECT_EQ(t.name, "ads");
  EXPECT_EQ(t.rows, 5000000);
  EXPECT_EQ(t.dim, 128);
  EXPECT_DOUBLE_EQ(t.pooling_factor, 12.5);
  EXPECT_EQ(t.dtype, DType::kFp16);
  ASSERT_TRUE(t.reuse_hist.has_value());
  EXPECT_DOUBLE_EQ((*t.reuse_hist)[0], 0.75);  // normalised on load
  EXPECT_DOUBLE_EQ((*t.reuse_hist)[1], 0.25);
}

TEST(TablesIo, IntegralFloatRowsAreAccepted) {
  auto tables = parse_tables(json::array({{{"rows", 1e6}, {"dim", 8}}}), "t.json");
  EXPECT_EQ(tables[0].rows, 1000000);
}

TEST(TablesIo, DimErrorNamesFilePathAndValue) {
  json list = json::array();
  for (int i = 0; i < 3; ++i) list.push_back({{"rows", 10}, {"dim", 8}});
  list.push_back({{"rows", 10}, {"dim", 13}});
  EXPECT_EQ(parse_error(json{{"tables", list}}),
            "tables.json: tables[3].dim: must be a positive multiple of 4, got 13");
}

TEST(TablesIo, RejectsBadFieldsWithTheirPath) {
  auto one = [](json table) { return json::array({table}); };
  EXPECT_NE(parse_error(one({{"rows", 0}, {"dim", 8}})).find("tables[0].rows: must be an integer in [1, "),
            std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", -5}, {"dim", 8}})).find("got -5"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 1.5}, {"dim", 8}})).find("tables[0].rows"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", "many"}, {"dim", 8}})).find("got \"many\""), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 1e300}, {"dim", 8}})).find("tables[0].rows"), std::string::npos);
  EXPECT_NE(parse_error(one({{"dim", 8}})).find("tables[0].rows: missing required field"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}})).find("tables[0].dim: missing"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 0}})).find("tables[0].dim: must be a positive multiple of 4, got 0"),
            std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 1 << 20}})).find("must be at most 65536"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 8}, {"pooling_factor", -1}})).find("tables[0].pooling_factor"),
            std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 8}, {"dtype", "int8"}})).find("tables[0].dtype"), std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 8}, {"name", ""}})).find("tables[0].name: must not be empty"),
            std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"dim", 8}, {"name", 7}})).find("tables[0].name: must be a string"),
            std::string::npos);
  EXPECT_NE(parse_error(one({{"rows", 10}, {"num_embeddings", 10}, {"dim", 8}})).find("not both"), std::string::npos);
  EXPECT_NE(parse_error(json::array({42})).find("tables[0]: must be an object, got 42"), std::string::npos);
}

TEST(TablesIo, RejectsBadReuseHistograms) {
  auto with_hist = [](json hist) { return json::array({{{"rows", 10}, {"dim", 8}, {"reuse_hist", hist}}}); };
  EXPECT_NE(parse_error(with_hist(json::array({1, 2, 3}))).find("tables[0].reuse_hist: must be an array of 17 numbers"),
            std::string::npos);
  json negative = json::array();
  for (int i = 0; i < kReuseBins; ++i) negative.push_back(i == 5 ? -0.1 : 0.1);
  EXPECT_NE(parse_error(with_hist(negative)).find("tables[0].reuse_hist[5]"), std::string::npos);
  json zeros = json::array();
  for (int i = 0; i < kReuseBins; ++i) zeros.push_back(0);
  // All zeros means "no lookups observed" (what the importer writes for an unused table): accepted.
  auto tables = parse_tables(with_hist(zeros), "t.json");
  EXPECT_DOUBLE_EQ((*tables[0].reuse_hist)[0], 0.0);
}

TEST(TablesIo, RejectsDuplicatesEmptyListsAndWrongTopLevel) {
  json dup = json::array({{{"name", "a"}, {"rows", 1}, {"dim", 4}}, {{"name", "a"}, {"rows", 1}, {"dim", 4}}});
  EXPECT_EQ(parse_error(dup), "tables.json: tables[1].name: duplicate name \"a\" (also tables[0])");
  // A default name collides with an explicit one too.
  json dup_default = json::array({{{"name", "t1"}, {"rows", 1}, {"dim", 4}}, {{"rows", 1}, {"dim", 4}}});
  EXPECT_NE(parse_error(dup_default).find("duplicate name \"t1\""), std::string::npos);
  EXPECT_EQ(parse_error(json::array()), "tables.json: tables: no tables given");
  EXPECT_NE(parse_error(json{{"tables", 3}}).find("tables: must be an array of tables, got 3"), std::string::npos);
  EXPECT_NE(parse_error(json("hello")).find("expected a JSON array of tables"), std::string::npos);
}

TEST(TablesIo, RoundTripsThroughJson) {
  Table t;
  t.name = "x";
  t.rows = 123456;
  t.dim = 36;
  t.pooling_factor = 2.5;
  t.dtype = DType::kFp16;
  ReuseHist hist{};
  hist[3] = 1.0;
  t.reuse_hist = hist;
  auto back = parse_tables(tables_to_json({t}), "t.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, t.name);
  EXPECT_EQ(back[0].rows, t.rows);
  EXPECT_EQ(back[0].dim, t.dim);
  EXPECT_EQ(back[0].pooling_factor, t.pooling_factor);
  EXPECT_EQ(back[0].dtype, t.dtype);
  EXPECT_EQ(*back[0].reuse_hist, hist);
}

TEST(TablesIo, LoadTablesReportsFileProblems) {
  try {
    load_tables("/nonexistent/tables.json");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/tables.json: no such file");
  }
}

}  // namespace
// A key twice in one object: the last would silently win, so the document is refused, naming the key, where
// it is and the object's name; the same key in different objects is fine.
TEST(JsonFile, DuplicateKeysAreRefusedWhereverTheyAre) {
  auto message = [](const std::string& text) {
    try {
      parse_json_text(text, "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message(R"({"tables": [{"name": "a", "rows": 1}, {"name": "b", "dim": 4, "dim": 8}]})"),
            "t.json: duplicate key \"dim\" in tables[1] (\"b\"): refused, as the last would silently win");
  EXPECT_EQ(message(R"({"a": 1, "a": 2})"),
            "t.json: duplicate key \"a\" in the top-level object: refused, as the last would silently win");
  EXPECT_EQ(message(R"([[1, {"x": {"y": 1, "y": 1}}]])"),
            "t.json: duplicate key \"y\" in [0][1].x: refused, as the last would silently win");
  EXPECT_EQ(message(R"([{"name": "a", "rows": 1}, {"name": "b", "rows": 1}, {"rows": {"rows": 2}}])"), "(accepted)");
  // Strings holding JSON's punctuation, a key spelt with an escape, an object of many keys, a byte order mark.
  EXPECT_EQ(message(R"([{"name": "a{[\",:", "x": "}]"}, {"name": "b", "rows": 1, "\u0072ows": 2}])"),
            "t.json: duplicate key \"rows\" in [1] (\"b\"): refused, as the last would silently win");
  std::string many = "{";
  for (int k = 0; k < 40; ++k) many += fmt::format("\"k{}\": {}, ", k, k);
  EXPECT_EQ(message(many + "\"k7\": 0}"),
            "t.json: duplicate key \"k7\" in the top-level object: refused, as the last would silently win");
  EXPECT_EQ(message("\xEF\xBB\xBF{\"a\": [1, {\"b\": 2, \"b\": 3}]}"),
            "t.json: duplicate key \"b\" in a[1]: refused, as the last would silently win");
  // A document that is one value, in no object (the fuzzer's find: 4e44 then bytes).
  EXPECT_EQ(message("4e44"), "(accepted)");
  EXPECT_EQ(message("\"name\""), "(accepted)");
  EXPECT_NE(message("4E44\xff\xff 44 \" 4\"").find("invalid JSON"), std::string::npos);
  // The document ends at a NUL byte, as nlohmann reads it; what follows, an open string here, is not read
  // (the fuzzer's find: the scan ran past the text's end).
  EXPECT_EQ(message(std::string("\t42\0\0\0E2222222ol\" \"", 19)), "(accepted)");
  EXPECT_EQ(message(std::string("{\"a\": 1}\0{\"a\": 1, \"a\": 2", 24)), "(accepted)");
}

}  // namespace shardplan
