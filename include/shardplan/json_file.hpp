#pragma once
// Reading JSON documents from files with errors that name the file and position.
#include <nlohmann/json.hpp>
#include <string>

namespace shardplan {

// Largest input file we read; anything larger is refused before reading.
inline constexpr std::uintmax_t kMaxJsonFileBytes = 1ull << 30;

// Reads and parses `path` (or standard input for "-"). Throws InputError naming the file.
nlohmann::json read_json_file(const std::string& path);

// A short rendering of a JSON value for error messages (truncated when long).
std::string describe_json_value(const nlohmann::json& value);

}  // namespace shardplan
