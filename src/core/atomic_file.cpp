#include "shardplan/core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

void write_all(int fd, std::string_view content, const std::string& name) {
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeFailure(fmt::format("{}: write failed: {}", name, std::strerror(errno)));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

// An existing device or FIFO: opened as it is (no O_CREAT, no O_TRUNC) and written.
void write_into(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw RuntimeFailure(fmt::format("{}: cannot open for writing: {}", path, std::strerror(errno)));
  try {
    write_all(fd, content, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw RuntimeFailure(fmt::format("{}: close failed: {}", path, std::strerror(errno)));
}

void write_standard_output(std::string_view content) {
  std::cout << content << std::flush;
  if (!std::cout) throw RuntimeFailure("standard output: write failed");
}

}  // namespace

OutputFiles::OutputFiles() = default;
OutputFiles::~OutputFiles() = default;

void OutputFiles::stage(const std::string& path, std::string_view content) {
  Staged staged{path, resolve_output(path), nullptr, {}};
  if (staged.target.kind != OutputTarget::Kind::kReplace) {
    staged.content.assign(content);
    staged_.push_back(std::move(staged));
    return;
  }
  const auto& file = staged.target.file;
  staged.temp = std::make_unique<TempFile>(file.parent_path(), file.filename().string(), path);
  write_all(staged.temp->fd(), content, staged.temp->path());
  if (::fchmod(staged.temp->fd(), 0644) != 0 || ::fsync(staged.temp->fd()) != 0) {
    throw RuntimeFailure(fmt::format("{}: cannot flush: {}", staged.temp->path(), std::strerror(errno)));
  }
  staged.temp->close();
  staged_.push_back(std::move(staged));
}

void OutputFiles::commit() {
  for (Staged& staged : staged_) {
    if (staged.target.kind == OutputTarget::Kind::kWriteInto) write_into(staged.path, staged.content);
    if (staged.target.kind == OutputTarget::Kind::kStandardOutput) write_standard_output(staged.content);
  }
  for (Staged& staged : staged_) {
    if (staged.temp) staged.temp->rename_to(staged.target.file.string());
  }
  staged_.clear();
}

void write_file_atomically(const std::string& path, std::string_view content) {
  OutputFiles outputs;
  outputs.stage(path, content);
  outputs.commit();
}

}  // namespace shardplan
