#pragma once
// Refuses a JSON object that gives a key twice ({"rows": 10, "rows": 99}): nlohmann keeps the last
// silently, as JSON parsers that check do not.
#include <string_view>

namespace shardplan {

// Scans `valid_json` (text nlohmann has already parsed) for an object with a key twice; throws InputError
// naming `source`, the key, where the object is ("[0]", "tables[3]") and its "name" when it has one. One
// pass over the bytes: nlohmann's callback parser, which could see the keys, reads large files 2.5x slower.
void check_duplicate_keys(std::string_view valid_json, std::string_view source);

}  // namespace shardplan
