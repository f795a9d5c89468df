#pragma once
// Pool and task files hold one table per line: compact, readable, and stable under `git diff`.
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/table.hpp"

namespace shardplan {

// "[\n{...},\n{...}\n]": each table as table_to_json(...).dump(), keys in sorted order, with the pooling
// factor rounded to 4 decimals and the histogram to 6 (stable, readable files).
std::string format_tables_array(const std::vector<Table>& tables);

// {"generated_by": "...", "tables": [...]}\n, readable by load_tables.
std::string format_pool_file(const std::vector<Table>& tables, std::string_view generated_by);

}  // namespace shardplan
