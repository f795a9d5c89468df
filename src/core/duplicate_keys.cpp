#include "duplicate_keys.hpp"

#include <fmt/format.h>

#include "shardplan/core/errors.hpp"

namespace shardplan {

std::string DuplicateKeyCheck::child_path() const {
  if (open_.empty()) return "";
  const Container& parent = open_.back();
  if (!parent.object) return fmt::format("{}[{}]", parent.path, parent.elements);
  return parent.path.empty() ? parent.key : parent.path + "." + parent.key;
}

void DuplicateKeyCheck::element_done() {
  if (!open_.empty() && !open_.back().object) ++open_.back().elements;
}

bool DuplicateKeyCheck::operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
  using Event = nlohmann::json::parse_event_t;
  switch (event) {
    case Event::object_start:
    case Event::array_start:
      open_.push_back(Container{event == Event::object_start, child_path(), 0, {}, "", "", ""});
      break;
    case Event::key: {
      Container& object = open_.back();
      object.key = parsed.get<std::string>();
      if (!object.keys.insert(object.key).second && object.duplicate.empty()) object.duplicate = object.key;
      break;
    }
    case Event::value: {
      // A document may be a single value, in no container.
      if (!open_.empty() && open_.back().object && open_.back().key == "name" && parsed.is_string()) {
        open_.back().name = parsed.get<std::string>();
      }
      element_done();
      break;
    }
    case Event::object_end:
    case Event::array_end: {
      const Container closed = std::move(open_.back());
      open_.pop_back();
      if (!closed.duplicate.empty()) {
        const std::string where = closed.path.empty() ? "the top-level object" : closed.path;
        const std::string named = closed.name.empty() ? "" : fmt::format(" (\"{}\")", closed.name);
        throw InputError(fmt::format("{}: duplicate key \"{}\" in {}{}: refused, as the last would silently win",
                                     source_, closed.duplicate, where, named));
      }
      element_done();
      break;
    }
  }
  return true;
}

}  // namespace shardplan
