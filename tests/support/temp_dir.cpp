#include "temp_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace shardplan::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "shardplan-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  std::ofstream out(dir_ / name, std::ios::binary);
  out << content;
  return path(name);
}

std::vector<std::string> TempDir::files() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace shardplan::testing
