#include "shardplan/importer/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shardplan/core/errors.hpp"

namespace shardplan::torchio {

namespace {

// Closes a descriptor unless released.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// zlib prefixes its messages with the stream's name, "<fd:3>" here; the caller names the file itself.
std::string zlib_message(gzFile gz) {
  int code = Z_OK;
  std::string message = ::gzerror(gz, &code);
  if (message.rfind("<fd:", 0) == 0) {
    auto colon = message.find(": ");
    if (colon != std::string::npos) message.erase(0, colon + 2);
  }
  return message;
}

// What a failure to unpack is about, and how to mend it.
constexpr const char* kTempDirSetting = "temporary directory";
constexpr const char* kTempDirAdvice = "name another, or set TMPDIR";

int create_anonymous_temp(const std::string& dir, const std::string& source) {
  std::string path = dir + "/.shard-plan-unpack.XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
    throw SettingError(kTempDirSetting, fmt::format("{} does not exist, so {} cannot be unpacked there ({})", dir,
                                                    source, kTempDirAdvice));
  }
  if (fd < 0) {
    throw SettingFailure(kTempDirSetting, fmt::format("{}: cannot create a file in it to unpack {}: {} ({})", dir,
                                                      source, std::strerror(errno), kTempDirAdvice));
  }
  ::unlink(path.c_str());  // anonymous from here on: the space is freed when the descriptor closes
  return fd;
}

void write_all(int fd, const char* data, std::size_t n, const std::string& source, const std::string& dir,
               uint64_t written_so_far) {
  while (n > 0) {
    ssize_t put = ::write(fd, data, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      throw SettingFailure(kTempDirSetting,
                           fmt::format("{}: cannot write the unpacked data of {} into it after {} bytes: {} (the "
                                       "unpacked size must fit; {})",
                                       dir, source, written_so_far, std::strerror(errno), kTempDirAdvice));
    }
    data += put;
    n -= static_cast<std::size_t>(put);
    written_so_far += static_cast<uint64_t>(put);
  }
}

// Streams the gzip data of `in_fd` (consumed) into an anonymous temporary; returns its descriptor.
int gunzip_to_temp(int in_fd, const std::string& source, const std::string& dir) {
  FdGuard out(create_anonymous_temp(dir, source));
  gzFile gz = ::gzdopen(in_fd, "rb");
  if (gz == nullptr) {
    ::close(in_fd);
    throw RuntimeFailure(fmt::format("{}: zlib cannot open the gzip stream", source));
  }
  ::gzbuffer(gz, 1u << 20);
  std::vector<char> buffer(std::size_t{4} << 20);
  uint64_t total = 0;
  auto last_log = std::chrono::steady_clock::now();
  try {
    while (true) {
      int got = ::gzread(gz, buffer.data(), static_cast<unsigned>(buffer.size()));
      if (got < 0) throw InputError(fmt::format("{}: corrupt gzip data: {}", source, zlib_message(gz)));
      if (got == 0) break;
      write_all(out.get(), buffer.data(), static_cast<std::size_t>(got), source, dir, total);
      total += static_cast<uint64_t>(got);
      auto now = std::chrono::steady_clock::now();
      if (now - last_log > std::chrono::seconds(10)) {
        spdlog::info("{}: unpacked {:.1f} GiB so far", source, static_cast<double>(total) / (1 << 30));
        last_log = now;
      }
    }
    // gzread reports a stream cut short only through gzerror once it hits the end.
    int code = Z_OK;
    ::gzerror(gz, &code);
    if (code != Z_OK) {
      throw InputError(fmt::format("{}: gzip stream ends early after {} unpacked bytes ({}): the file is truncated",
                                   source, total, zlib_message(gz)));
    }
  } catch (...) {
    ::gzclose(gz);
    throw;
  }
  ::gzclose(gz);
  spdlog::info("{}: unpacked {} bytes into an anonymous temporary file in {}", source, total, dir);
  return out.release();
}

}  // namespace

std::string resolve_temp_dir(const std::string& requested) {
  if (!requested.empty()) return requested;
  const char* env = std::getenv("TMPDIR");
  if (env != nullptr && *env != '\0') return env;
  return "/tmp";
}

OpenedInput open_maybe_gzipped(const std::string& path, const std::string& temp_dir) {
  FdGuard fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    int err = errno;
    if (err == ENOENT) throw InputError(fmt::format("{}: no such file", path));
    throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw InputError(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory", path));

  unsigned char magic[2] = {0, 0};
  ssize_t got = ::pread(fd.get(), magic, sizeof(magic), 0);
  OpenedInput input;
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    input.gunzipped = true;
    input.compressed_bytes = static_cast<uint64_t>(st.st_size);
    std::string dir = resolve_temp_dir(temp_dir);
    spdlog::info("{}: gzip file; unpacking it into {} first", path, dir);
    input.file = std::make_unique<RandomAccessFile>(gunzip_to_temp(fd.release(), path, dir), path);
  } else {
    input.file = std::make_unique<RandomAccessFile>(fd.release(), path);
  }
  return input;
}

}  // namespace shardplan::torchio
