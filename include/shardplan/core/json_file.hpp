#pragma once
// Reading JSON documents from files with errors that name the file and position.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shardplan {

// Largest input file we read; anything larger is refused before reading.
inline constexpr std::uintmax_t kMaxJsonFileBytes = 1ull << 30;

// Deepest nesting of arrays and objects accepted: real inputs nest 4 levels, and nlohmann's dump and
// comparison recurse, so a hostile file nested a million deep must be refused before it is parsed.
inline constexpr int kMaxJsonDepth = 64;

// Parses JSON text; errors (malformed, empty, too deep) throw InputError naming `source`.
nlohmann::json parse_json_text(std::string_view text, std::string_view source);

// Reads and parses `path` (or standard input for "-"). Throws InputError naming the file.
nlohmann::json read_json_file(const std::string& path);

// A short rendering of a JSON value for error messages (truncated when long).
std::string describe_json_value(const nlohmann::json& value);

}  // namespace shardplan
