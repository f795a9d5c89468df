#include "model_verify.hpp"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/sha256.hpp"

namespace shardplan {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;

// The SHA-256 `meta` records for `file_name`; empty when meta records none (an older model).
std::string recorded_sha256(const nlohmann::json& meta, const std::string& file_name, const std::string& source) {
  const auto* files = find_member(meta, kModelFilesKey);
  if (files == nullptr) return "";
  read_object(*files, source, kModelFilesKey);
  const std::string field = fmt::format("{}.{}", kModelFilesKey, file_name);
  const auto& entry = require_member(*files, file_name, source, kModelFilesKey);
  read_object(entry, source, field);
  std::string hash = read_string(require_member(entry, "sha256", source, field), source, field + ".sha256");
  const bool hex = hash.size() == 64 && hash.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) throw_field_error(source, field + ".sha256", "must be 64 lowercase hex digits", entry["sha256"]);
  return hash;
}

std::string file_sha256(const torchio::RandomAccessFile& file) {
  Sha256 hash;
  std::vector<char> buffer(kChunk);
  for (uint64_t offset = 0; offset < file.size();) {
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(buffer.size(), file.size() - offset));
    file.read_exact(offset, buffer.data(), n, "the file");
    hash.update(buffer.data(), n);
    offset += n;
  }
  return hash.hex_digest();
}

}  // namespace

nlohmann::json model_files_record(const std::vector<std::pair<std::string, std::string_view>>& files) {
  nlohmann::json record = nlohmann::json::object();
  for (const auto& [name, content] : files) record[name] = {{"sha256", sha256_hex(content)}};
  return record;
}

void verify_model_archive(const torchio::RandomAccessFile& file, const nlohmann::json& meta,
                          const std::string& meta_source) {
  const torchio::ZipReader zip(file);
  for (const torchio::ZipEntry& entry : zip.entries()) zip.verify_crc(entry);
  const std::string name = std::filesystem::path(file.name()).filename().string();
  const std::string recorded = recorded_sha256(meta, name, meta_source);
  if (recorded.empty()) return;
  const std::string actual = file_sha256(file);
  if (actual != recorded) {
    throw InputError(
        fmt::format("{}: its SHA-256 is {}, but {} records {}: the file changed after the model was "
                    "written (corrupted or replaced)",
                    file.name(), actual, meta_source, recorded));
  }
}

void verify_model_file(const std::string& path, const nlohmann::json& meta, const std::string& meta_source) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  const torchio::RandomAccessFile file(fd, path);
  verify_model_archive(file, meta, meta_source);
}

}  // namespace shardplan
