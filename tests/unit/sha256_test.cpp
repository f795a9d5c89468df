#include <gtest/gtest.h>

#include "shardplan/core/sha256.hpp"

namespace shardplan {
namespace {

// FIPS 180-4's examples (NIST's "SHA-256 example" vectors).
TEST(Sha256, MatchesTheStandardsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesHashAsOneBlock) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  for (std::size_t cut : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 hash;
    hash.update(text.data(), cut);
    hash.update(text.data() + cut, text.size() - cut);
    EXPECT_EQ(hash.hex_digest(), sha256_hex(text)) << cut;
  }
}

}  // namespace
}  // namespace shardplan
