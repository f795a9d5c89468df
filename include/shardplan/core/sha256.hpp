#pragma once
// SHA-256 (FIPS 180-4): the content hash a model directory's meta.json records for each weights file,
// so that a changed or corrupted file is refused on load. Self-contained: no crypto library needed.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardplan {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hex_digest();

 private:
  void compress(const unsigned char* block);

  std::array<uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
};

std::string sha256_hex(std::string_view data);

}  // namespace shardplan
