#include "logging/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace loom::logging {
namespace {

TEST(Crc32cTest, EmptyIsZero) { EXPECT_EQ(Crc32c(""), 0u); }

TEST(Crc32cTest, CheckValue) { EXPECT_EQ(Crc32c("123456789"), 0xE3069283u); }

// Test vectors from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, Rfc3720ZeroBytes) { EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu); }

TEST(Crc32cTest, Rfc3720OnesBytes) { EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u); }

TEST(Crc32cTest, Rfc3720IncreasingBytes) {
  std::string data;
  for (int i = 0; i < 32; ++i) data.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(data), 0x46DD794Eu);
}

TEST(Crc32cTest, Rfc3720DecreasingBytes) {
  std::string data;
  for (int i = 31; i >= 0; --i) data.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(data), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string data = "The quick brown fox jumps over the lazy dog";
  for (size_t split = 0; split <= data.size(); ++split) {
    absl::string_view v(data);
    EXPECT_EQ(Crc32cExtend(Crc32c(v.substr(0, split)), v.substr(split)), Crc32c(data))
        << "split at " << split;
  }
}

TEST(Crc32cTest, MaskMatchesFormulaAndUnmaskInverts) {
  const uint32_t crc = 0xE3069283u;
  const uint32_t expected = static_cast<uint32_t>(((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(crc), expected);
  for (uint32_t v : {0u, 1u, 0xFFFFFFFFu, 0x80000000u, crc}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(v)), v);
  }
}

// The 8 little-endian length bytes of an empty record; value from Debian's python3-crcmod
// (crcmod.predefined "crc-32c"), an independent implementation.
TEST(Crc32cTest, EightZeroBytes) { EXPECT_EQ(Crc32c(std::string(8, '\0')), 0x8C28B28Au); }

}  // namespace
}  // namespace loom::logging
