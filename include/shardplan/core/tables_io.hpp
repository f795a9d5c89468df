#pragma once
// Reading and writing the tables format: a JSON array of tables, or an object with a "tables" array.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// Parses tables from JSON. `source` (a file name) prefixes every error message, which names the JSON
// path and the offending value: "tables.json: tables[3].dim: must be a positive multiple of 4, got 13".
// Throws InputError.
std::vector<Table> parse_tables(const nlohmann::json& doc, std::string_view source);

// Parses one table object; `path` is its JSON path for messages ("tables[3]"). Names are not defaulted
// or checked for uniqueness here (parse_tables does that).
Table parse_table(const nlohmann::json& obj, std::string_view source, const std::string& path, std::size_t index);

// Reads and parses a tables file. Throws InputError (missing file, malformed JSON, bad fields).
std::vector<Table> load_tables(const std::string& path);

nlohmann::json table_to_json(const Table& table);
// {"tables": [...]}
nlohmann::json tables_to_json(const std::vector<Table>& tables);

}  // namespace shardplan
