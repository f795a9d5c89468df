#pragma once
// The pool and task files as shipped in data/: the shared readable layout (dump_readable: one table per
// line, stable under `git diff`), with pooling factors rounded to 4 decimals and histograms to 6 so the
// files are stable and short (the tables loader renormalises histograms).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/table.hpp"

namespace shardplan {

// The tables as the files hold them, each as table_to_json of its rounded values.
nlohmann::ordered_json rounded_tables_json(const std::vector<Table>& tables);

// {"generated_by": "...", "tables": [...]}, readable by load_tables; ends with a newline.
std::string format_pool_file(const std::vector<Table>& tables, std::string_view generated_by);

}  // namespace shardplan
