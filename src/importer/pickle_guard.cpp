#include "shardplan/importer/pickle_guard.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "shardplan/core/errors.hpp"

namespace shardplan::torchio {

namespace {

constexpr std::size_t kMaxMemo = 1 << 16;   // torch.save puts one memo entry per object: a handful here
constexpr std::size_t kMaxDepth = 1 << 20;  // stack entries or marks

class Walker {
 public:
  Walker(const std::string& pickle, const std::string& source) : p_(pickle), source_(source) {}

  void run() {
    while (true) {
      if (pos_ >= p_.size()) fail("ends without its STOP opcode: truncated");
      const std::size_t at = pos_;
      const auto op = static_cast<unsigned char>(p_[pos_++]);
      switch (op) {
        case 0x80:  // PROTO
          if (byte() > 5) fail(fmt::format("unknown pickle protocol at byte {}", at));
          break;
        case '(':  // MARK
          if (marks_.size() >= kMaxDepth) fail("nests too deeply");
          marks_.push_back(depth_);
          break;
        case '.':  // STOP
          if (depth_ != 1 || !marks_.empty()) fail(fmt::format("stops at byte {} with an unbalanced stack", at));
          return;
        case ')':   // EMPTY_TUPLE
        case ']':   // EMPTY_LIST
        case 'N':   // NONE
        case 0x88:  // NEWTRUE
        case 0x89:  // NEWFALSE
          push();
          break;
        case 'K':  // BININT1
          skip(1);
          push();
          break;
        case 'M':  // BININT2
          skip(2);
          push();
          break;
        case 'J':  // BININT
          skip(4);
          push();
          break;
        case 0x8a: {  // LONG1
          std::size_t n = byte();
          if (n > 8) fail(fmt::format("has a {}-byte integer at byte {}", n, at));
          skip(n);
          push();
          break;
        }
        case 'X':  // BINUNICODE
          skip(u32());
          push();
          break;
        case 't':  // TUPLE: everything above the last mark
          depth_ = pop_mark(at);
          push();
          break;
        case 0x85:  // TUPLE1
        case 0x86:  // TUPLE2
        case 0x87:  // TUPLE3
          pop(op - 0x84u, at);
          push();
          break;
        case 'a':  // APPEND: list, item
          pop(2, at);
          push();
          break;
        case 'e': {  // APPENDS: list, mark, items
          std::size_t mark = pop_mark(at);
          depth_ = mark;
          pop(1, at);  // the list below the mark must belong to the enclosing frame
          push();
          break;
        }
        case 'q':  // BINPUT
          put(byte(), at);
          break;
        case 'r':  // LONG_BINPUT
          put(u32(), at);
          break;
        case 'h':  // BINGET
          get(byte(), at);
          break;
        case 'j':  // LONG_BINGET
          get(u32(), at);
          break;
        case 'c':  // GLOBAL "module\nname\n"
          global(at);
          push();
          break;
        case 'R':  // REDUCE: callable, args -> result
          pop(2, at);
          push();
          break;
        case 'Q':  // BINPERSID: persistent id -> object
          pop(1, at);
          push();
          break;
        default:
          fail(fmt::format("uses pickle opcode 0x{:02x} at byte {}, which a saved tuple of tensors does not", op, at));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: data.pkl {} (it is not a tuple of tensors saved by torch.save, or is damaged)",
                                 source_, what));
  }
  void skip(std::size_t n) {
    if (n > p_.size() - pos_) fail("ends inside an argument: truncated");
    pos_ += n;
  }
  std::size_t byte() {
    skip(1);
    return static_cast<unsigned char>(p_[pos_ - 1]);
  }
  std::size_t u32() {
    skip(4);
    std::size_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p_[pos_ - 4 + static_cast<std::size_t>(i)]);
    return v;
  }
  void push() {
    if (++depth_ > kMaxDepth) fail("nests too deeply");
  }
  // Pops n entries, never below the innermost mark (pickle's marks delimit frames).
  void pop(std::size_t n, std::size_t at) {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (depth_ < floor + n) fail(fmt::format("pops an empty stack at byte {}", at));
    depth_ -= n;
  }
  std::size_t pop_mark(std::size_t at) {
    if (marks_.empty()) fail(fmt::format("uses a mark that was never set at byte {}", at));
    std::size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  void put(std::size_t id, std::size_t at) {
    if (id >= kMaxMemo) fail(fmt::format("has memo index {} at byte {}", id, at));
    if (depth_ == (marks_.empty() ? 0 : marks_.back())) fail(fmt::format("memoizes an empty stack at byte {}", at));
    if (memo_.size() <= id) memo_.resize(id + 1, false);
    memo_[id] = true;
  }
  void get(std::size_t id, std::size_t at) {
    if (id >= memo_.size() || !memo_[id])
      fail(fmt::format("reads memo entry {} that was never set at byte {}", id, at));
    push();
  }
  std::string line() {
    std::size_t end = p_.find('\n', pos_);
    if (end == std::string::npos) fail("ends inside a global name: truncated");
    std::string text = p_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return text;
  }
  void global(std::size_t at) {
    std::string module = line();
    std::string name = line();
    bool storage = module == "torch" && name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0;
    if (storage || (module == "torch._utils" && name == "_rebuild_tensor_v2") ||
        (module == "collections" && name == "OrderedDict")) {
      return;
    }
    fail(fmt::format("refers to {}.{} at byte {}", module, name, at));
  }

  const std::string& p_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::vector<std::size_t> marks_;
  std::vector<bool> memo_;
};

}  // namespace

void check_tensor_pickle(const std::string& pickle, const std::string& source) { Walker(pickle, source).run(); }

}  // namespace shardplan::torchio
