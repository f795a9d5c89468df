#include "shardplan/core/json_format.hpp"

namespace shardplan {

namespace {

using ojson = nlohmann::ordered_json;

bool is_scalar_array(const ojson& value) {
  if (!value.is_array()) return false;
  for (const auto& item : value) {
    if (item.is_structured()) return false;
  }
  return true;
}

// Inline when nothing inside would need its own line.
bool is_flat(const ojson& value) {
  if (!value.is_structured()) return true;
  for (const auto& item : value) {
    if (item.is_structured() && !is_scalar_array(item)) return false;
  }
  return true;
}

std::string inline_text(const ojson& value) {
  if (!value.is_structured()) return value.dump();
  std::string out(1, value.is_array() ? '[' : '{');
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (value.is_object()) out += ojson(it.key()).dump() + ": ";
    out += inline_text(*it);
  }
  out += value.is_array() ? ']' : '}';
  return out;
}

void write(const ojson& value, int depth, int indent_width, std::string& out) {
  if (is_flat(value) || value.empty()) {
    out += inline_text(value);
    return;
  }
  const std::string inner(static_cast<std::size_t>((depth + 1) * indent_width), ' ');
  out += value.is_array() ? "[\n" : "{\n";
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += inner;
    if (value.is_object()) out += ojson(it.key()).dump() + ": ";
    write(*it, depth + 1, indent_width, out);
  }
  out += "\n" + std::string(static_cast<std::size_t>(depth * indent_width), ' ') + (value.is_array() ? "]" : "}");
}

}  // namespace

std::string dump_readable(const ojson& value, int indent_width) {
  std::string out;
  write(value, 0, indent_width, out);
  return out;
}

}  // namespace shardplan
