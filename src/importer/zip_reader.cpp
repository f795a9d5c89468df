#include "shardplan/importer/zip_reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "shardplan/core/errors.hpp"

namespace shardplan::torchio {

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalHeaderSize = 30;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kZip64EndSize = 56;
constexpr std::size_t kZip64LocatorSize = 20;
// Far above any torch.save archive (a handful of entries); they bound what a hostile directory can cost.
constexpr uint64_t kMaxEntries = 1'000'000;
constexpr uint64_t kMaxDirectoryBytes = 64 << 20;

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const unsigned char* p) {
  return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

}  // namespace

RandomAccessFile::RandomAccessFile(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw InputError(fmt::format("{}: cannot stat: {}", name_, std::strerror(err)));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

RandomAccessFile::~RandomAccessFile() { ::close(fd_); }

void RandomAccessFile::read_exact(uint64_t offset, void* dst, std::size_t n, const char* what) const {
  if (offset > size_ || n > size_ - offset) {
    throw InputError(fmt::format("{}: file ends inside {} (needs bytes {}..{}, the file has {}): truncated?", name_,
                                 what, offset, offset + n, size_));
  }
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    // Linux transfers at most ~2 GiB per call; ask for less and loop.
    std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
    ssize_t got = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: read error in {}: {}", name_, what, std::strerror(errno)));
    }
    if (got == 0) throw InputError(fmt::format("{}: unexpected end of file in {}", name_, what));
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

ZipReader::ZipReader(const RandomAccessFile& file) : file_(file) {
  const std::string& name = file.name();
  const uint64_t size = file.size();
  if (size < kEndSize) {
    throw InputError(fmt::format("{}: not a torch.save zip archive ({} bytes, too short)", name, size));
  }
  // The end-of-central-directory record sits in the last 22 bytes plus an optional comment (< 64 KiB).
  uint64_t tail_len = std::min<uint64_t>(size, kEndSize + 0xFFFF);
  std::vector<unsigned char> tail(tail_len);
  file.read_exact(size - tail_len, tail.data(), tail.size(), "the zip end record");
  std::size_t end_pos = std::string::npos;
  for (std::size_t i = tail.size() - kEndSize + 1; i-- > 0;) {
    if (le32(&tail[i]) == kEndSig && i + kEndSize + le16(&tail[i + 20]) <= tail.size()) {
      end_pos = i;
      break;
    }
  }
  if (end_pos == std::string::npos) {
    unsigned char head[4] = {};
    file.read_exact(0, head, sizeof(head), "the file header");
    if (le32(head) == kLocalHeaderSig) {
      throw InputError(fmt::format("{}: zip archive without its central directory: the file is truncated", name));
    }
    if (head[0] == 0x80) {
      throw InputError(
          fmt::format("{}: a bare pickle, not a zip archive: the legacy torch.save format (PyTorch < 1.6, "
                      "or _use_new_zipfile_serialization=False) is not supported; re-save it with a newer "
                      "PyTorch",
                      name));
    }
    throw InputError(fmt::format("{}: not a torch.save file (no zip archive found)", name));
  }
  const unsigned char* end = &tail[end_pos];
  const uint64_t end_offset = size - tail_len + end_pos;
  uint64_t entry_count = le16(end + 10);
  uint64_t dir_size = le32(end + 12);
  uint64_t dir_offset = le32(end + 16);
  // Zip64: any saturated field means the real values are in the zip64 end record, found via its locator.
  if (entry_count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) {
    if (end_offset < kZip64LocatorSize) throw InputError(fmt::format("{}: zip64 locator missing", name));
    unsigned char loc[kZip64LocatorSize];
    file.read_exact(end_offset - kZip64LocatorSize, loc, sizeof(loc), "the zip64 locator");
    if (le32(loc) != kZip64LocatorSig) throw InputError(fmt::format("{}: zip64 locator missing or corrupt", name));
    uint64_t z64_offset = le64(loc + 8);
    unsigned char z64[kZip64EndSize];
    file.read_exact(z64_offset, z64, sizeof(z64), "the zip64 end record");
    if (le32(z64) != kZip64EndSig) throw InputError(fmt::format("{}: zip64 end record corrupt", name));
    entry_count = le64(z64 + 32);
    dir_size = le64(z64 + 40);
    dir_offset = le64(z64 + 48);
  }
  if (entry_count > kMaxEntries || dir_size > kMaxDirectoryBytes || dir_size > size || dir_offset > size - dir_size) {
    throw InputError(
        fmt::format("{}: zip central directory out of range ({} entries, {} bytes at {}, file of {} bytes): "
                    "truncated or corrupt",
                    name, entry_count, dir_size, dir_offset, size));
  }
  std::vector<unsigned char> dir(dir_size);
  file.read_exact(dir_offset, dir.data(), dir.size(), "the zip central directory");

  std::size_t pos = 0;
  entries_.reserve(entry_count);
  for (uint64_t i = 0; i < entry_count; ++i) {
    if (pos + kCentralHeaderSize > dir.size() || le32(&dir[pos]) != kCentralHeaderSig) {
      throw InputError(fmt::format("{}: zip central directory corrupt at entry {}", name, i));
    }
    const unsigned char* h = &dir[pos];
    ZipEntry entry;
    entry.method = le16(h + 10);
    entry.crc32 = le32(h + 16);
    entry.compressed_size = le32(h + 20);
    entry.uncompressed_size = le32(h + 24);
    std::size_t name_len = le16(h + 28);
    std::size_t extra_len = le16(h + 30);
    std::size_t comment_len = le16(h + 32);
    entry.local_header_offset = le32(h + 42);
    if (pos + kCentralHeaderSize + name_len + extra_len + comment_len > dir.size()) {
      throw InputError(fmt::format("{}: zip central directory corrupt at entry {}", name, i));
    }
    entry.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_len);
    // The zip64 extra field holds, in this order, only the values saturated in the fixed header.
    const unsigned char* extra = h + kCentralHeaderSize + name_len;
    for (std::size_t e = 0; e + 4 <= extra_len;) {
      uint16_t id = le16(extra + e);
      std::size_t len = le16(extra + e + 2);
      if (e + 4 + len > extra_len) break;
      if (id == 0x0001) {
        const unsigned char* f = extra + e + 4;
        std::size_t left = len;
        auto take = [&](uint64_t& value) {
          if (value != 0xFFFFFFFF) return;
          if (left < 8) throw InputError(fmt::format("{}: zip64 field of entry {} too short", name, entry.name));
          value = le64(f);
          f += 8;
          left -= 8;
        };
        take(entry.uncompressed_size);
        take(entry.compressed_size);
        take(entry.local_header_offset);
      }
      e += 4 + len;
    }
    entries_.push_back(std::move(entry));
    pos += kCentralHeaderSize + name_len + extra_len + comment_len;
  }
}

const ZipEntry* ZipReader::find(const std::string& entry_name) const {
  for (const auto& entry : entries_) {
    if (entry.name == entry_name) return &entry;
  }
  return nullptr;
}

uint64_t ZipReader::stored_data_offset(const ZipEntry& entry) const {
  unsigned char h[kLocalHeaderSize];
  file_.read_exact(entry.local_header_offset, h, sizeof(h), "a zip entry header");
  if (le32(h) != kLocalHeaderSig) {
    throw InputError(fmt::format("{}: zip entry {}: local header corrupt", file_.name(), entry.name));
  }
  uint64_t data = entry.local_header_offset + kLocalHeaderSize + le16(h + 26) + le16(h + 28);
  if (data > file_.size() || entry.compressed_size > file_.size() - data) {
    throw InputError(
        fmt::format("{}: zip entry {} ({} bytes at offset {}) runs past the end of the file ({} bytes): "
                    "truncated",
                    file_.name(), entry.name, entry.compressed_size, data, file_.size()));
  }
  return data;
}

std::string ZipReader::read_small(const ZipEntry& entry, uint64_t max_bytes) const {
  if (entry.uncompressed_size > max_bytes || entry.compressed_size > max_bytes) {
    throw InputError(fmt::format("{}: zip entry {} is {} bytes, more than the {} expected", file_.name(), entry.name,
                                 entry.uncompressed_size, max_bytes));
  }
  uint64_t data = stored_data_offset(entry);
  std::string raw(entry.compressed_size, '\0');
  file_.read_exact(data, raw.data(), raw.size(), entry.name.c_str());
  if (entry.method == 0) return raw;
  if (entry.method != 8) {
    throw InputError(fmt::format("{}: zip entry {} uses compression method {}; only stored and deflated are supported",
                                 file_.name(), entry.name, entry.method));
  }
  // torch.save never compresses, but an archive repacked by a zip tool may; those entries are small here.
  std::string out(entry.uncompressed_size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw RuntimeFailure("zlib: inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_FINISH);
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != out.size()) {
    throw InputError(fmt::format("{}: zip entry {}: corrupt deflate data", file_.name(), entry.name));
  }
  return out;
}

namespace {

constexpr std::size_t kCrcChunk = std::size_t{1} << 20;

}  // namespace

void ZipReader::verify_crc(const ZipEntry& entry) const {
  const uint64_t data = stored_data_offset(entry);
  auto corrupt = [&](const std::string& why) {
    return InputError(fmt::format("{}: zip entry {}: {}: the file is corrupt", file_.name(), entry.name, why));
  };
  std::vector<unsigned char> in(kCrcChunk);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  uint64_t produced = 0;
  if (entry.method == 0) {
    if (entry.compressed_size != entry.uncompressed_size) throw corrupt("stored with two different sizes");
    for (uint64_t done = 0; done < entry.compressed_size;) {
      const auto n = static_cast<std::size_t>(std::min<uint64_t>(in.size(), entry.compressed_size - done));
      file_.read_exact(data + done, in.data(), n, entry.name.c_str());
      crc = ::crc32(crc, in.data(), static_cast<uInt>(n));
      done += n;
    }
    produced = entry.compressed_size;
  } else if (entry.method == 8) {
    produced = inflate_with_crc(entry, data, in, crc);
  } else {
    throw InputError(fmt::format("{}: zip entry {} uses compression method {}; only stored and deflated are supported",
                                 file_.name(), entry.name, entry.method));
  }
  if (produced != entry.uncompressed_size)
    throw corrupt(fmt::format("{} bytes, but {} recorded", produced, entry.uncompressed_size));
  if (crc != entry.crc32) throw corrupt(fmt::format("CRC-32 {:08x}, but {:08x} recorded", crc, entry.crc32));
}

uint64_t ZipReader::inflate_with_crc(const ZipEntry& entry, uint64_t data, std::vector<unsigned char>& in,
                                     unsigned long& crc) const {
  std::vector<unsigned char> out(kCrcChunk);
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw RuntimeFailure("zlib: inflateInit2 failed");
  uint64_t read = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0 && read < entry.compressed_size) {
      const auto n = static_cast<std::size_t>(std::min<uint64_t>(in.size(), entry.compressed_size - read));
      file_.read_exact(data + read, in.data(), n, entry.name.c_str());
      read += n;
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t got = out.size() - zs.avail_out;
    crc = ::crc32(crc, out.data(), static_cast<uInt>(got));
    // More than recorded, or no progress on input that is all there: corrupt (and no zip bomb grows here).
    const bool stuck = got == 0 && zs.avail_in == 0 && read == entry.compressed_size && rc != Z_STREAM_END;
    if ((rc != Z_OK && rc != Z_STREAM_END) || zs.total_out > entry.uncompressed_size || stuck) {
      inflateEnd(&zs);
      throw InputError(fmt::format("{}: zip entry {}: corrupt deflate data", file_.name(), entry.name));
    }
  }
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  return produced;
}

}  // namespace shardplan::torchio
