#include "shardplan/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "shardplan/errors.hpp"

namespace shardplan {

namespace {

void write_all(int fd, std::string_view content, const std::string& tmp) {
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeFailure(fmt::format("{}: write failed: {}", tmp, std::strerror(errno)));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content) {
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path().empty() ? "." : target.parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw RuntimeFailure(fmt::format("{}: directory {} does not exist", path, dir.string()));
  }
  std::string tmp_template = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmp_template.data());
  if (fd < 0) throw RuntimeFailure(fmt::format("{}: cannot create a temporary file: {}", path, std::strerror(errno)));
  const std::string tmp = tmp_template;
  try {
    write_all(fd, content, tmp);
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
      throw RuntimeFailure(fmt::format("{}: cannot flush: {}", tmp, std::strerror(errno)));
    }
    if (::close(fd) != 0) {
      fd = -1;
      throw RuntimeFailure(fmt::format("{}: close failed: {}", tmp, std::strerror(errno)));
    }
    fd = -1;
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw RuntimeFailure(fmt::format("{}: cannot rename into place: {}", path, std::strerror(errno)));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace shardplan
