#include <gtest/gtest.h>

#include "shardplan/core/errors.hpp"
#include "shardplan/core/units.hpp"

namespace shardplan {
namespace {

TEST(Units, ParsesBytesAndBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_byte_size("17179869184", "--mem"), 17179869184);
  EXPECT_EQ(parse_byte_size("16GiB", "--mem"), 16ll << 30);
  EXPECT_EQ(parse_byte_size("80GB", "--mem"), 80'000'000'000);
  EXPECT_EQ(parse_byte_size("512MiB", "--mem"), 512ll << 20);
  EXPECT_EQ(parse_byte_size("512mib", "--mem"), 512ll << 20);
  EXPECT_EQ(parse_byte_size("1.5 GiB", "--mem"), 3ll << 29);
  EXPECT_EQ(parse_byte_size("2TB", "--mem"), 2'000'000'000'000);
  EXPECT_EQ(parse_byte_size("4KiB", "--mem"), 4096);
  EXPECT_EQ(parse_byte_size("100B", "--mem"), 100);
}

TEST(Units, RejectsMalformedSizesNamingTheFlag) {
  for (const char* bad : {"", "GiB", "16 parsecs", "-5GiB", "1.2.3GB", "0", "0.1B", "1.5", "1e30", "99999999999TiB"}) {
    try {
      parse_byte_size(bad, "--mem-per-gpu");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind("--mem-per-gpu: ", 0), 0u) << message;
      EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
    }
  }
}

TEST(Units, FormatsBytes) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(16ll << 30), "16.00 GiB");
  EXPECT_EQ(format_bytes(3ll << 40), "3.00 TiB");
}

}  // namespace
}  // namespace shardplan
