#include "shardplan/dataset/compact_json.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "shardplan/tables_io.hpp"

namespace shardplan {

namespace {

double round_to(double value, double scale) { return std::round(value * scale) / scale; }

// What the file holds: pooling factors to 4 decimals, histograms to 6 (the loader renormalises them).
Table rounded(Table table) {
  table.pooling_factor = round_to(table.pooling_factor, 1e4);
  if (table.reuse_hist) {
    for (double& h : *table.reuse_hist) h = round_to(h, 1e6);
  }
  return table;
}

}  // namespace

std::string format_tables_array(const std::vector<Table>& tables) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < tables.size(); ++i) {
    out += table_to_json(rounded(tables[i])).dump();
    out += i + 1 < tables.size() ? ",\n" : "\n";
  }
  out += "]";
  return out;
}

std::string format_pool_file(const std::vector<Table>& tables, std::string_view generated_by) {
  return "{\"generated_by\": " + nlohmann::json(std::string(generated_by)).dump() +
         ", \"tables\": " + format_tables_array(tables) + "}\n";
}

}  // namespace shardplan
