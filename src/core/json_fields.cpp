#include "shardplan/core/json_fields.hpp"

#include <fmt/format.h>

#include <cmath>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"

namespace shardplan {

std::optional<int64_t> json_as_int64(const nlohmann::json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_unsigned()) {
    auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_float()) {
    double d = value.get<double>();
    // 2^63 is exactly representable; anything at or above it overflows int64.
    if (std::isfinite(d) && d == std::floor(d) && d > -9.2e18 && d < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<double> json_as_double(const nlohmann::json& value) {
  if (!value.is_number()) return std::nullopt;
  double d = value.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

void throw_field_error(std::string_view source, const std::string& path, std::string_view message,
                       const nlohmann::json& value) {
  throw InputError(fmt::format("{}: {}: {}, got {}", source, path, message, describe_json_value(value)));
}

void throw_missing_field(std::string_view source, const std::string& path) {
  throw InputError(fmt::format("{}: {}: missing required field", source, path));
}

int64_t read_int64(const nlohmann::json& value, std::string_view source, const std::string& path, int64_t min,
                   int64_t max) {
  auto v = json_as_int64(value);
  if (!v || *v < min || *v > max) {
    throw_field_error(source, path, fmt::format("must be an integer in [{}, {}]", min, max), value);
  }
  return *v;
}

double read_double(const nlohmann::json& value, std::string_view source, const std::string& path, double min,
                   double max) {
  auto v = json_as_double(value);
  if (!v || *v < min || *v > max) {
    throw_field_error(source, path, fmt::format("must be a finite number in [{}, {}]", min, max), value);
  }
  return *v;
}

std::string read_string(const nlohmann::json& value, std::string_view source, const std::string& path) {
  if (!value.is_string()) throw_field_error(source, path, "must be a string", value);
  return value.get<std::string>();
}

const nlohmann::json& read_array(const nlohmann::json& value, std::string_view source, const std::string& path) {
  if (!value.is_array()) throw_field_error(source, path, "must be an array", value);
  return value;
}

bool read_bool(const nlohmann::json& value, std::string_view source, const std::string& path) {
  if (!value.is_boolean()) throw_field_error(source, path, "must be true or false", value);
  return value.get<bool>();
}

const nlohmann::json& read_object(const nlohmann::json& value, std::string_view source, const std::string& path) {
  if (!value.is_object()) throw_field_error(source, path, "must be an object", value);
  return value;
}

const nlohmann::json* find_member(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

const nlohmann::json& require_member(const nlohmann::json& obj, std::string_view key, std::string_view source,
                                     const std::string& path) {
  const nlohmann::json* member = find_member(obj, key);
  if (member == nullptr) throw_missing_field(source, path.empty() ? std::string(key) : path + "." + std::string(key));
  return *member;
}

}  // namespace shardplan
