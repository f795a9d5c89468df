#include "shardplan/core/json_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "duplicate_keys.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

std::string read_all(std::istream& in) {
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
std::string strip_exception_tag(const std::string& what) {
  auto pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

// Nesting depth of the brackets outside strings; stops counting once past the limit.
int nesting_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size() && deepest <= kMaxJsonDepth; ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, std::string_view source) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw InputError(fmt::format("{}: file is empty, expected JSON", source));
  }
  if (nesting_depth(text) > kMaxJsonDepth) {
    throw InputError(fmt::format("{}: invalid JSON: nested more than {} levels deep", source, kMaxJsonDepth));
  }
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    check_duplicate_keys(text, source);
    return doc;
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double ("1e999"), found by fuzzing.
    throw InputError(fmt::format("{}: invalid JSON: {}", source, strip_exception_tag(e.what())));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::string text;
  if (path == "-") {
    text = read_all(std::cin);
  } else {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: no such file", path));
    if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{}: is a directory", path));
    auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxJsonFileBytes) {
      throw InputError(
          fmt::format("{}: file is {} bytes, over the {} byte limit for JSON inputs", path, size, kMaxJsonFileBytes));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open for reading", path));
    text = read_all(in);
  }
  return parse_json_text(text, path);
}

std::string describe_json_value(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace shardplan
