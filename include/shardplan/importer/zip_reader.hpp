#pragma once
// A minimal reader for the zip container of torch.save (PyTorch >= 1.6): it lists the entries from the
// central directory (zip64 included) and reads their bytes with pread, so a multi-gigabyte tensor record
// can be read piecewise and never has to sit in memory whole. LibTorch's PyTorchStreamReader only hands
// out whole records, and does not expose an entry's size or compression. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace shardplan::torchio {

// An open file, read with pread from any offset; closed on destruction.
class RandomAccessFile {
 public:
  // Takes ownership of `fd`; `name` prefixes every error message.
  RandomAccessFile(int fd, std::string name);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; throws InputError (naming `what`) if the file ends first.
  void read_exact(uint64_t offset, void* dst, std::size_t n, const char* what) const;

 private:
  int fd_;
  std::string name_;
  uint64_t size_ = 0;
};

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc32 = 0;   // of the uncompressed data, as the central directory records it
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

class ZipReader {
 public:
  // Reads the central directory; throws InputError if the file is not a zip archive or is truncated.
  explicit ZipReader(const RandomAccessFile& file);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // Offset in the file of a stored (uncompressed) entry's first byte, checked to lie within the file.
  uint64_t stored_data_offset(const ZipEntry& entry) const;
  // The whole content of a small entry, stored or deflated; refuses entries over `max_bytes`.
  std::string read_small(const ZipEntry& entry, uint64_t max_bytes) const;
  // Reads the entry through (a megabyte at a time) and throws InputError when its data does not match
  // its recorded CRC-32 or size: the archive is corrupt.
  void verify_crc(const ZipEntry& entry) const;

 private:
  // verify_crc's deflated case: the bytes inflated (their CRC-32 added to `crc`).
  uint64_t inflate_with_crc(const ZipEntry& entry, uint64_t data, std::vector<unsigned char>& in,
                            unsigned long& crc) const;

  const RandomAccessFile& file_;
  std::vector<ZipEntry> entries_;
};

}  // namespace shardplan::torchio
