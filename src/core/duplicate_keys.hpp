#pragma once
// A parse callback that refuses a JSON object with a key twice ({"rows": 10, "rows": 99}): nlohmann keeps
// the last silently, as JSON parsers that check do not.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace shardplan {

class DuplicateKeyCheck {
 public:
  // Names the document in errors ("tables.json").
  explicit DuplicateKeyCheck(std::string source) : source_(std::move(source)) {}

  // nlohmann::json's parser_callback_t: throws InputError naming the key, where it is ("[0]", "tables[3]")
  // and that object's "name" when it has one.
  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed);

 private:
  struct Container {
    bool object = false;
    std::string path;
    std::size_t elements = 0;  // of an array, so far
    std::set<std::string> keys;
    std::string key;        // of an object: the member being read
    std::string duplicate;  // the first key seen twice, reported when the object ends (its name known)
    std::string name;
  };

  std::string child_path() const;
  void element_done();

  std::string source_;
  std::vector<Container> open_;
};

}  // namespace shardplan
