#include "logging/crc32c.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "logging/crc32c_internal.h"

namespace loom::logging {
namespace {

using crc32c_internal::Crc32cExtendHardware;
using crc32c_internal::Crc32cExtendPortable;
using crc32c_internal::HardwareCrc32cAvailable;

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

// ---------------------------------------------------------------------------------------------
// The two implementations behind Crc32cExtend, checked one by one and against each other.

// A bit-at-a-time CRC-32C written from the definition, independent of both implementations.
uint32_t BitwiseCrc32cExtend(uint32_t crc, absl::string_view data) {
  uint32_t c = ~crc;
  for (unsigned char byte : data) {
    c ^= byte;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string s(n, '\0');
  for (char& ch : s) ch = static_cast<char>(gen() & 0xFFu);
  return s;
}

// On x86-64 the fast path must actually be taken (every x86-64 CPU since 2008 has SSE4.2);
// elsewhere the "hardware" function is the table, which the tests below then compare to itself.
TEST(Crc32cImplTest, HardwarePathIsUsedOnX86) {
#if defined(__x86_64__)
  EXPECT_TRUE(HardwareCrc32cAvailable());
#else
  EXPECT_FALSE(HardwareCrc32cAvailable());
#endif
}

struct Impl {
  const char* name;
  uint32_t (*extend)(uint32_t, absl::string_view);
  friend void PrintTo(const Impl& impl, std::ostream* os) { *os << impl.name; }
};

class Crc32cVectorsTest : public ::testing::TestWithParam<Impl> {};

TEST_P(Crc32cVectorsTest, KnownVectors) {
  auto crc = [](absl::string_view d) { return GetParam().extend(0, d); };
  EXPECT_EQ(crc(""), 0u);
  EXPECT_EQ(crc(absl::string_view()), 0u);
  EXPECT_EQ(crc("123456789"), 0xE3069283u);
  EXPECT_EQ(crc(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc(std::string(32, '\xff')), 0x62A8AB43u);
  std::string inc, dec;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  for (int i = 31; i >= 0; --i) dec.push_back(static_cast<char>(i));
  EXPECT_EQ(crc(inc), 0x46DD794Eu);
  EXPECT_EQ(crc(dec), 0x113FDB5Cu);
  EXPECT_EQ(crc(std::string(8, '\0')), 0x8C28B28Au);
  // The RFC 3720 zeros vector at every alignment (the hardware path aligns with single bytes).
  alignas(64) char buf[32 + 16] = {};
  for (int offset = 0; offset < 16; ++offset) {
    EXPECT_EQ(crc(absl::string_view(buf + offset, 32)), 0x8A9136AAu) << "offset " << offset;
  }
}

TEST_P(Crc32cVectorsTest, MatchesBitwiseDefinition) {
  // Lengths past one block of three long lanes (3 * 8192 bytes), so every path runs.
  const std::string data = RandomBytes(3 * 8192 + 3 * 256 + 77, 7);
  for (size_t n :
       {size_t{1}, size_t{63}, size_t{1000}, size_t{3 * 256}, size_t{3 * 8192}, data.size()}) {
    EXPECT_EQ(GetParam().extend(0, absl::string_view(data).substr(0, n)),
              BitwiseCrc32cExtend(0, absl::string_view(data).substr(0, n)))
        << "length " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, Crc32cVectorsTest,
                         ::testing::Values(Impl{"Portable", Crc32cExtendPortable},
                                           Impl{"Hardware", Crc32cExtendHardware},
                                           Impl{"Public", Crc32cExtend}),
                         [](const ::testing::TestParamInfo<Impl>& info) {
                           return info.param.name;
                         });

// Every length 0..1100 (single words, the 768-byte short-lane threshold and beyond) at every
// 8-byte alignment, from a random starting CRC.
TEST(Crc32cImplTest, HardwareEqualsTableSmallLengthsAllAlignments) {
  const std::string data = RandomBytes(1100 + 8, 1);
  std::mt19937 gen(2);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n <= 1100; ++n) {
      const absl::string_view v = absl::string_view(data).substr(offset, n);
      const uint32_t start = n % 3 == 0 ? 0u : static_cast<uint32_t>(gen());
      ASSERT_EQ(Crc32cExtendHardware(start, v), Crc32cExtendPortable(start, v))
          << "offset " << offset << " length " << n << " start crc " << start;
    }
  }
}

// Lengths at and around the block sizes of both lane kinds and their sums, at odd alignments.
TEST(Crc32cImplTest, HardwareEqualsTableAtBlockBoundaries) {
  constexpr size_t kLong = 3 * 8192;
  constexpr size_t kShort = 3 * 256;
  std::vector<size_t> lengths;
  for (size_t base : {kShort, 2 * kShort, kLong - kShort, kLong, kLong + kShort,
                      2 * kLong + 31 * kShort, 3 * kLong}) {
    for (int d = -17; d <= 17; ++d) lengths.push_back(base + d);
  }
  const std::string data = RandomBytes(3 * kLong + 64, 3);
  for (size_t offset : {0, 1, 3, 7, 8, 13}) {
    for (size_t n : lengths) {
      const absl::string_view v = absl::string_view(data).substr(offset, n);
      ASSERT_EQ(Crc32cExtendHardware(0x12345678u, v), Crc32cExtendPortable(0x12345678u, v))
          << "offset " << offset << " length " << n;
    }
  }
}

// Random lengths and offsets into a large buffer, including multi-megabyte ones.
TEST(Crc32cImplTest, HardwareEqualsTableRandomLargeBuffers) {
  const std::string data = RandomBytes((8 << 20) + 4096, 4);
  std::mt19937_64 gen(5);
  for (int i = 0; i < 40; ++i) {
    const size_t offset = gen() % 4096;
    const size_t max_len = i < 30 ? 200000 : (8 << 20);
    const size_t n = gen() % (max_len + 1);
    const uint32_t start = static_cast<uint32_t>(gen());
    const absl::string_view v = absl::string_view(data).substr(offset, n);
    ASSERT_EQ(Crc32cExtendHardware(start, v), Crc32cExtendPortable(start, v))
        << "offset " << offset << " length " << n;
  }
  EXPECT_EQ(Crc32c(data), Crc32cExtendPortable(0, data));
}

// Uniform data exercises the lane merge with registers that stay at special values.
TEST(Crc32cImplTest, HardwareEqualsTableUniformData) {
  for (char byte : {'\0', '\xff', '\x5a'}) {
    const std::string data((1 << 20) + 5, byte);
    EXPECT_EQ(Crc32cExtendHardware(0, data), Crc32cExtendPortable(0, data)) << int(byte);
  }
}

// Checksumming in random pieces (as checkpoint/folder does, 1 MiB reads) gives the whole's CRC.
TEST(Crc32cImplTest, HardwareExtendInRandomPiecesEqualsWhole) {
  const std::string data = RandomBytes(3 << 20, 6);
  const uint32_t whole = Crc32cExtendPortable(0, data);
  std::mt19937_64 gen(7);
  for (int round = 0; round < 4; ++round) {
    const size_t max_piece = round == 0 ? 17 : round == 1 ? 3000 : round == 2 ? 70000 : 1 << 20;
    uint32_t crc = 0;
    for (size_t pos = 0; pos < data.size();) {
      const size_t n = std::min(data.size() - pos, static_cast<size_t>(gen() % (max_piece + 1)));
      crc = Crc32cExtendHardware(crc, absl::string_view(data).substr(pos, n));
      pos += n;
    }
    EXPECT_EQ(crc, whole) << "pieces up to " << max_piece << " bytes";
  }
}

}  // namespace
}  // namespace loom::logging
