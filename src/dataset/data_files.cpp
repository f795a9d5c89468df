#include "shardplan/dataset/data_files.hpp"

#include <cmath>

#include "shardplan/core/json_format.hpp"
#include "shardplan/core/tables_io.hpp"

namespace shardplan {

namespace {

double round_to(double value, double scale) { return std::round(value * scale) / scale; }

Table rounded(Table table) {
  table.pooling_factor = round_to(table.pooling_factor, 1e4);
  if (table.reuse_hist) {
    for (double& h : *table.reuse_hist) h = round_to(h, 1e6);
  }
  return table;
}

}  // namespace

nlohmann::ordered_json rounded_tables_json(const std::vector<Table>& tables) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& table : tables) out.push_back(nlohmann::ordered_json(table_to_json(rounded(table))));
  return out;
}

std::string format_pool_file(const std::vector<Table>& tables, std::string_view generated_by) {
  nlohmann::ordered_json doc = {{"generated_by", std::string(generated_by)}, {"tables", rounded_tables_json(tables)}};
  return dump_readable(doc) + "\n";
}

}  // namespace shardplan
