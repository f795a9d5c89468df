#include "shardplan/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

struct Unit {
  std::string_view name;
  double factor;
};

constexpr std::array<Unit, 9> kUnits = {{{"b", 1.0},
                                         {"kb", 1e3},
                                         {"mb", 1e6},
                                         {"gb", 1e9},
                                         {"tb", 1e12},
                                         {"kib", 1024.0},
                                         {"mib", 1024.0 * 1024},
                                         {"gib", 1024.0 * 1024 * 1024},
                                         {"tib", 1024.0 * 1024 * 1024 * 1024}}};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

int64_t parse_byte_size(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return InputError(fmt::format("{}: {}, got '{}' (examples: 17179869184, 16GiB, 80GB, 512MiB)", what, why, text));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  std::string number(text.substr(0, i));
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    throw bad("expected a size");
  }
  std::size_t j = i;
  while (j < text.size() && text[j] == ' ') ++j;
  std::string unit = lower(text.substr(j));
  double factor = 1.0;
  if (!unit.empty()) {
    auto it = std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == unit; });
    if (it == kUnits.end()) throw bad("unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
    factor = it->factor;
  }
  double value = std::strtod(number.c_str(), nullptr) * factor;
  if (!std::isfinite(value) || value >= 9.0e18) throw bad("too large");
  if (value < 1.0) throw bad("must be at least 1 byte");
  if (unit.empty() && number.find('.') != std::string::npos) throw bad("a size in bytes must be a whole number");
  return static_cast<int64_t>(std::llround(value));
}

std::string format_bytes(int64_t bytes) { return format_byte_total(static_cast<long double>(bytes)); }

std::string format_byte_total(long double bytes) {
  constexpr std::array<std::string_view, 5> kNames = {"B", "KiB", "MiB", "GiB", "TiB"};
  long double value = bytes;
  std::size_t unit = 0;
  while (std::abs(value) >= 1024.0L && unit + 1 < kNames.size()) {
    value /= 1024.0L;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", static_cast<int64_t>(bytes));
  return fmt::format("{:.2f} {}", static_cast<double>(value), kNames[unit]);
}

}  // namespace shardplan
