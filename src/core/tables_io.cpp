#include "shardplan/core/tables_io.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"

namespace shardplan {

namespace {

const std::set<std::string>& known_table_keys() {
  static const std::set<std::string> keys = {"name",           "rows",           "num_embeddings", "dim",
                                             "embedding_dim",  "pooling_factor", "reuse_hist",     "dtype",
                                             "sharding_types", "ranks"};
  return keys;
}

// A field that has an alias: at most one of the two spellings may be given.
const nlohmann::json* find_aliased(const nlohmann::json& obj, std::string_view key, std::string_view alias,
                                   std::string_view source, const std::string& path) {
  const nlohmann::json* a = find_member(obj, key);
  const nlohmann::json* b = find_member(obj, alias);
  if (a != nullptr && b != nullptr) {
    throw InputError(fmt::format("{}: {}: give either \"{}\" or \"{}\", not both", source, path, key, alias));
  }
  return a != nullptr ? a : b;
}

ReuseHist parse_reuse_hist(const nlohmann::json& value, std::string_view source, const std::string& path) {
  if (!value.is_array() || value.size() != kReuseBins) {
    throw_field_error(source, path, fmt::format("must be an array of {} numbers", kReuseBins), value);
  }
  ReuseHist hist{};
  double sum = 0.0;
  for (int i = 0; i < kReuseBins; ++i) {
    hist[i] = read_double(value[i], source, fmt::format("{}[{}]", path, i), 0.0, 1e300);
    sum += hist[i];
  }
  if (!std::isfinite(sum)) throw_field_error(source, path, "must sum to a finite number", value);
  // All zeros is a table with no lookups observed (what the importer writes); keep it as is.
  if (sum > 0.0) {
    for (double& h : hist) h /= sum;
  }
  return hist;
}

// Pinned ranks are at most this (a sanity bound; the cluster checks the real one).
constexpr int64_t kMaxPinnedRank = 1'000'000;

ShardingTypeSet parse_table_sharding_types(const nlohmann::json& value, std::string_view source,
                                           const std::string& path) {
  const nlohmann::json& list = read_array(value, source, path);
  if (list.empty()) throw_field_error(source, path, "must list at least one sharding type", value);
  ShardingTypeSet set;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item_path = fmt::format("{}[{}]", path, i);
    const std::string name = read_string(list[i], source, item_path);
    const auto type = parse_sharding_type(name);
    if (!type) {
      throw_field_error(source, item_path,
                        "must be one of table_wise, column_wise, row_wise, table_row_wise, data_parallel", list[i]);
    }
    if (set.allows(*type)) throw_field_error(source, item_path, "is listed twice", list[i]);
    set.add(*type);
  }
  return set;
}

std::vector<int> parse_pinned_ranks(const nlohmann::json& value, std::string_view source, const std::string& path) {
  const nlohmann::json& list = read_array(value, source, path);
  if (list.empty()) throw_field_error(source, path, "must list at least one rank (leave it out to allow any)", value);
  std::vector<int> ranks;
  for (std::size_t i = 0; i < list.size(); ++i) {
    ranks.push_back(static_cast<int>(read_int64(list[i], source, fmt::format("{}[{}]", path, i), 0, kMaxPinnedRank)));
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    throw_field_error(source, path, "lists a rank twice", value);
  return ranks;
}

// A table's sharding_types and ranks. Pinned tables take table- or column-wise shards only.
TableConstraints parse_constraints(const nlohmann::json& obj, std::string_view source, const std::string& path) {
  TableConstraints c;
  if (const auto* types = find_member(obj, "sharding_types")) {
    c.sharding_types = parse_table_sharding_types(*types, source, path + ".sharding_types");
  }
  if (const auto* ranks = find_member(obj, "ranks")) c.ranks = parse_pinned_ranks(*ranks, source, path + ".ranks");
  if (!c.pinned()) return c;
  if (c.sharding_types.empty()) return TableConstraints{ShardingTypeSet::table_and_column(), c.ranks};
  if (c.sharding_types.beyond_table_and_column()) {
    throw_field_error(source, path + ".sharding_types",
                      "must be table_wise or column_wise for a table with ranks (row-wise, table-row-wise and "
                      "data-parallel shards span ranks the cluster fixes)",
                      *find_member(obj, "sharding_types"));
  }
  return c;
}

}  // namespace

Table parse_table(const nlohmann::json& obj, std::string_view source, const std::string& path, std::size_t index) {
  if (!obj.is_object()) throw_field_error(source, path, "must be an object", obj);
  Table table;
  if (const auto* name = find_member(obj, "name")) {
    table.name = read_string(*name, source, path + ".name");
    if (table.name.empty()) throw_field_error(source, path + ".name", "must not be empty", *name);
  } else {
    table.name = fmt::format("t{}", index);
  }

  const nlohmann::json* rows = find_aliased(obj, "rows", "num_embeddings", source, path);
  if (rows == nullptr) throw_missing_field(source, path + ".rows");
  std::string rows_path = path + (find_member(obj, "rows") ? ".rows" : ".num_embeddings");
  auto rows_value = json_as_int64(*rows);
  if (!rows_value || *rows_value < 1 || *rows_value > kMaxRows) {
    throw_field_error(source, rows_path, fmt::format("must be an integer in [1, {}]", kMaxRows), *rows);
  }
  table.rows = *rows_value;

  const nlohmann::json* dim = find_aliased(obj, "dim", "embedding_dim", source, path);
  if (dim == nullptr) throw_missing_field(source, path + ".dim");
  std::string dim_path = path + (find_member(obj, "dim") ? ".dim" : ".embedding_dim");
  auto dim_value = json_as_int64(*dim);
  if (!dim_value || *dim_value < 4 || *dim_value % 4 != 0) {
    throw_field_error(source, dim_path, "must be a positive multiple of 4", *dim);
  }
  if (*dim_value > kMaxDim) throw_field_error(source, dim_path, fmt::format("must be at most {}", kMaxDim), *dim);
  table.dim = static_cast<int>(*dim_value);

  if (const auto* pf = find_member(obj, "pooling_factor")) {
    table.pooling_factor = read_double(*pf, source, path + ".pooling_factor", 0.0, kMaxPoolingFactor);
  }
  if (const auto* hist = find_member(obj, "reuse_hist")) {
    if (!hist->is_null()) table.reuse_hist = parse_reuse_hist(*hist, source, path + ".reuse_hist");
  }
  if (const auto* dtype = find_member(obj, "dtype")) {
    std::string text = read_string(*dtype, source, path + ".dtype");
    auto parsed = parse_dtype(text);
    if (!parsed) throw_field_error(source, path + ".dtype", "must be \"fp32\" or \"fp16\"", *dtype);
    table.dtype = *parsed;
  }
  table.constraints = parse_constraints(obj, source, path);
  return table;
}

std::vector<Table> parse_tables(const nlohmann::json& doc, std::string_view source) {
  const nlohmann::json* list = nullptr;
  if (doc.is_array()) {
    list = &doc;
  } else if (doc.is_object() && find_member(doc, "tables") != nullptr) {
    list = find_member(doc, "tables");
    if (!list->is_array()) throw_field_error(source, "tables", "must be an array of tables", *list);
  } else {
    throw InputError(fmt::format("{}: expected a JSON array of tables or an object with a \"tables\" array, got {}",
                                 source, describe_json_value(doc)));
  }
  if (list->empty()) throw InputError(fmt::format("{}: tables: no tables given", source));

  std::vector<Table> tables;
  tables.reserve(list->size());
  std::unordered_map<std::string, std::size_t> first_index;
  std::set<std::string> unknown_keys;
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string path = fmt::format("tables[{}]", i);
    const nlohmann::json& obj = (*list)[i];
    tables.push_back(parse_table(obj, source, path, i));
    auto [it, inserted] = first_index.emplace(tables.back().name, i);
    if (!inserted) {
      throw InputError(fmt::format("{}: {}.name: duplicate name \"{}\" (also tables[{}])", source, path,
                                   tables.back().name, it->second));
    }
    for (const auto& item : obj.items()) {
      if (known_table_keys().count(item.key()) == 0) unknown_keys.insert(item.key());
    }
  }
  for (const auto& key : unknown_keys) spdlog::warn("{}: ignoring unknown table field \"{}\"", source, key);
  return tables;
}

std::vector<Table> load_tables(const std::string& path) { return parse_tables(read_json_file(path), path); }

nlohmann::json table_to_json(const Table& table) {
  nlohmann::json obj = {
      {"name", table.name}, {"rows", table.rows}, {"dim", table.dim}, {"pooling_factor", table.pooling_factor}};
  if (table.reuse_hist) obj["reuse_hist"] = *table.reuse_hist;
  if (table.dtype != DType::kFp32) obj["dtype"] = std::string(dtype_name(table.dtype));
  const TableConstraints& c = table.constraints;
  if (!c.sharding_types.empty()) {
    nlohmann::json types = nlohmann::json::array();
    for (int i = 0; i < kNumShardingTypes; ++i) {
      if (c.sharding_types.allows(static_cast<ShardingType>(i)))
        types.push_back(sharding_type_name(static_cast<ShardingType>(i)));
    }
    obj["sharding_types"] = types;
  }
  if (c.pinned()) obj["ranks"] = c.ranks;
  return obj;
}

nlohmann::json tables_to_json(const std::vector<Table>& tables) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& table : tables) list.push_back(table_to_json(table));
  return {{"tables", list}};
}

}  // namespace shardplan
