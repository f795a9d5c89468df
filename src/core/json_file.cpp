#include "shardplan/json_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "shardplan/errors.hpp"

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

}  // namespace

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
      throw InputError(fmt::format("{}: file is {} bytes, over the {} byte limit for JSON inputs", path, size,
                                   kMaxJsonFileBytes));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open for reading", path));
    text = read_all(in);
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(fmt::format("{}: file is empty, expected JSON", path));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: invalid JSON: {}", path, strip_exception_tag(e.what())));
  }
}

std::string describe_json_value(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace shardplan
