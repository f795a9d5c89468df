#pragma once
// Human-friendly, deterministic JSON text: containers holding only scalars (or arrays of scalars) stay on
// one line, everything else is indented. A plan then reads one shard and one device per line.
#include <nlohmann/json.hpp>
#include <string>

namespace shardplan {

std::string dump_readable(const nlohmann::ordered_json& value, int indent_width = 2);

}  // namespace shardplan
