#pragma once
// What every fuzz target shares: the input as JSON text, and the rule that bad input may only ever end
// in InputError (any other exception escapes and libFuzzer reports it as a crash).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shardplan::fuzz {

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace shardplan::fuzz
