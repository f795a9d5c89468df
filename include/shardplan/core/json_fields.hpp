#pragma once
// Typed reads of JSON fields for the input parsers: every failure names the source, the JSON path and
// the value, and throws InputError.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace shardplan {

// An integral JSON number (an integer, or a float with no fractional part that fits int64).
std::optional<int64_t> json_as_int64(const nlohmann::json& value);
// A finite JSON number.
std::optional<double> json_as_double(const nlohmann::json& value);

// Error "source: path: message, got <value>".
[[noreturn]] void throw_field_error(std::string_view source, const std::string& path, std::string_view message,
                                    const nlohmann::json& value);
// Error "source: path: message" for a field that is absent.
[[noreturn]] void throw_missing_field(std::string_view source, const std::string& path);

int64_t read_int64(const nlohmann::json& value, std::string_view source, const std::string& path, int64_t min,
                   int64_t max);
double read_double(const nlohmann::json& value, std::string_view source, const std::string& path, double min,
                   double max);
bool read_bool(const nlohmann::json& value, std::string_view source, const std::string& path);
std::string read_string(const nlohmann::json& value, std::string_view source, const std::string& path);
const nlohmann::json& read_array(const nlohmann::json& value, std::string_view source, const std::string& path);
const nlohmann::json& read_object(const nlohmann::json& value, std::string_view source, const std::string& path);

// The member `key` of `obj`, or nullptr.
const nlohmann::json* find_member(const nlohmann::json& obj, std::string_view key);
const nlohmann::json& require_member(const nlohmann::json& obj, std::string_view key, std::string_view source,
                                     const std::string& path);

}  // namespace shardplan
