#include "duplicate_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

// An object's keys: a short list searched in place, a set once it grows (objects of many members).
class KeySet {
 public:
  bool insert(std::string_view key) {
    if (set_.empty() && list_.size() < kListed) {
      if (std::find(list_.begin(), list_.end(), key) != list_.end()) return false;
      list_.push_back(key);
      return true;
    }
    if (set_.empty()) set_.insert(list_.begin(), list_.end());
    return set_.insert(key).second;
  }

 private:
  static constexpr std::size_t kListed = 16;
  std::vector<std::string_view> list_;
  std::unordered_set<std::string_view> set_;
};

struct Container {
  bool object = false;
  std::size_t elements = 0;  // of an array, so far
  std::string_view key;      // of an object: the member being read
  KeySet keys;
  std::string_view duplicate;  // the first key seen twice, reported when the object ends (its name known)
  std::string_view name;
};

class Scanner {
 public:
  Scanner(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  void run() {
    // nlohmann skips a UTF-8 byte order mark.
    const std::size_t start = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    for (std::size_t i = start; i < text_.size(); ++i) {
      const char c = text_[i];
      if (c == '\0') break;  // nlohmann's document ends at a NUL byte: what follows was never parsed
      if (c == '{' || c == '[') {
        open_.push_back(Container{c == '{', 0, {}, {}, {}, {}});
        expect_key_ = c == '{';
      } else if (c == '}' || c == ']') {
        close();
      } else if (c == ',') {
        expect_key_ = !open_.empty() && open_.back().object;
      } else if (c == '"') {
        i = string_at(i);
      } else if (c != ':' && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        while (i + 1 < text_.size() && std::string_view(",]} \t\n\r").find(text_[i + 1]) == std::string_view::npos) ++i;
        element_done();  // a number or a literal
      }
    }
  }

 private:
  // The string starting at `quote`; returns the index of its closing quote (or the text's end).
  std::size_t string_at(std::size_t quote) {
    std::size_t end = quote + 1;
    while (end < text_.size() && text_[end] != '"') end += text_[end] == '\\' ? 2 : 1;
    if (end >= text_.size()) return text_.size();
    const std::string_view raw = text_.substr(quote + 1, end - quote - 1);
    const std::string_view value =
        raw.find('\\') == std::string_view::npos ? raw : unescaped(text_.substr(quote, end - quote + 1));
    Container* top = open_.empty() ? nullptr : &open_.back();
    if (top && top->object && expect_key_) {
      top->key = value;
      if (!top->keys.insert(value) && top->duplicate.empty()) top->duplicate = value;
      expect_key_ = false;
    } else {
      if (top && top->object && top->key == "name") top->name = value;
      element_done();
    }
    return end;
  }

  // A string with escapes, as nlohmann reads it (rare: kept for the scan's life).
  std::string_view unescaped(std::string_view quoted) {
    return decoded_.emplace_back(nlohmann::json::parse(quoted).get<std::string>());
  }

  void element_done() {
    if (!open_.empty() && !open_.back().object) ++open_.back().elements;
  }

  // Where the innermost open container is: "" for the document itself, else "tables[3].x".
  std::string path_of_innermost() const {
    std::string path;
    for (std::size_t k = 0; k + 1 < open_.size(); ++k) {
      const Container& parent = open_[k];
      if (!parent.object) {
        path += fmt::format("[{}]", parent.elements);
      } else {
        path += path.empty() ? std::string(parent.key) : "." + std::string(parent.key);
      }
    }
    return path;
  }

  void close() {
    if (open_.empty()) return;
    const Container& closed = open_.back();
    if (!closed.duplicate.empty()) {
      const std::string path = path_of_innermost();
      const std::string where = path.empty() ? "the top-level object" : path;
      const std::string named = closed.name.empty() ? "" : fmt::format(" (\"{}\")", closed.name);
      throw InputError(fmt::format("{}: duplicate key \"{}\" in {}{}: refused, as the last would silently win", source_,
                                   closed.duplicate, where, named));
    }
    open_.pop_back();
    expect_key_ = false;
    element_done();
  }

  std::string_view text_;
  std::string_view source_;
  std::vector<Container> open_;
  std::deque<std::string> decoded_;
  bool expect_key_ = false;
};

}  // namespace

void check_duplicate_keys(std::string_view valid_json, std::string_view source) { Scanner(valid_json, source).run(); }

}  // namespace shardplan
