#include "logging/crc32c.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "logging/crc32c_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LOOM_CRC32C_X86 1
#include <nmmintrin.h>  // _mm_crc32_u8 / _mm_crc32_u64 (SSE4.2), enabled per function below
#endif

namespace loom::logging {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) {
      c = (c & 1u) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
    }
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

#ifdef LOOM_CRC32C_X86

// GF(2) polynomial arithmetic modulo the Castagnoli polynomial P, in the CRC's reflected bit
// order: bit 31 holds the coefficient of x^0 and bit 0 that of x^31. In this order the CRC
// register (the value between the initial and final inversions) is a polynomial, and feeding it
// n zero bytes multiplies it by x^(8n) mod P.

// a(x) * b(x) mod P.
constexpr uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & (0x80000000u >> i)) product ^= b;                 // + a_i * b(x) * x^i
    b = (b & 1u) ? (b >> 1) ^ kCastagnoliReflected : b >> 1;  // b(x) *= x
  }
  return product;
}

// x^(8 * bytes) mod P, by square and multiply.
constexpr uint32_t XPow8nModP(uint64_t bytes) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t square = 0x40000000u;  // x^1, then x^2, x^4, ...
  for (uint64_t e = 8 * bytes; e != 0; e >>= 1) {
    if (e & 1) result = MulModP(result, square);
    square = MulModP(square, square);
  }
  return result;
}

// The linear map "CRC register after `bytes` more zero bytes", split by the register's four
// bytes: Shift(t, c) = c(x) * x^(8 * bytes) mod P.
using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTable MakeShiftTable(uint64_t bytes) {
  const uint32_t multiplier = XPow8nModP(bytes);
  ShiftTable t{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = MulModP(multiplier, b << (8 * k));
  }
  return t;
}

inline uint32_t Shift(const ShiftTable& t, uint32_t c) {
  return t[0][c & 0xFFu] ^ t[1][(c >> 8) & 0xFFu] ^ t[2][(c >> 16) & 0xFFu] ^ t[3][c >> 24];
}

// Lane sizes in bytes: a buffer of at least 3 * kLongLane bytes goes through blocks of three
// kLongLane lanes, what remains through blocks of three kShortLane lanes, then single words. Each
// block costs two Shift()s (8 table loads); long lanes make that negligible, short ones keep
// mid-sized buffers (768 B .. 24 KiB) on three lanes.
constexpr size_t kLongLane = 8192;
constexpr size_t kShortLane = 256;
constexpr ShiftTable kLongShift = MakeShiftTable(kLongLane);
constexpr ShiftTable kShortShift = MakeShiftTable(kShortLane);

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));  // x86 is little-endian, as the crc32 instruction expects
  return v;
}

// Consumes whole blocks of 3 * kLane bytes from (*p, *n). The crc32 instruction has a 3-cycle
// latency and a throughput of one per cycle, so one dependency chain uses a third of it: the
// three lanes of a block run as independent chains, lanes 1 and 2 from a zero register, and are
// then merged: crc(A B C) = ((crc(A) * x^8L + crc0(B)) * x^8L + crc0(C)) mod P.
template <size_t kLane>
__attribute__((target("sse4.2"))) inline uint64_t ThreeLanes(uint64_t c0, const ShiftTable& shift,
                                                             const unsigned char** p, size_t* n) {
  const unsigned char* q = *p;
  size_t left = *n;
  while (left >= 3 * kLane) {
    uint64_t c1 = 0;
    uint64_t c2 = 0;
    const unsigned char* const end = q + kLane;
    do {
      c0 = _mm_crc32_u64(c0, Load64(q));
      c1 = _mm_crc32_u64(c1, Load64(q + kLane));
      c2 = _mm_crc32_u64(c2, Load64(q + 2 * kLane));
      q += 8;
    } while (q != end);
    c0 = Shift(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
    c0 = Shift(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c2);
    q += 2 * kLane;
    left -= 3 * kLane;
  }
  *p = q;
  *n = left;
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const unsigned char* p,
                                                       size_t n) {
  uint64_t c = static_cast<uint32_t>(~crc);
  // Single bytes up to an 8-byte boundary, so that the word loads below never split cache lines.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  c = ThreeLanes<kLongLane>(c, kLongShift, &p, &n);
  c = ThreeLanes<kShortLane>(c, kShortShift, &p, &n);
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, Load64(p));
  for (; n > 0; --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

#endif  // LOOM_CRC32C_X86

}  // namespace

namespace crc32c_internal {

uint32_t Crc32cExtendPortable(uint32_t crc, absl::string_view data) {
  uint32_t c = ~crc;
  for (unsigned char byte : data) {
    c = kTable[(c ^ byte) & 0xFFu] ^ (c >> 8);
  }
  return ~c;
}

bool HardwareCrc32cAvailable() {
#ifdef LOOM_CRC32C_X86
  static const bool available = [] {
    __builtin_cpu_init();  // safe to call more than once; needed if we run before its constructor
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
#else
  return false;
#endif
}

uint32_t Crc32cExtendHardware(uint32_t crc, absl::string_view data) {
#ifdef LOOM_CRC32C_X86
  if (HardwareCrc32cAvailable()) {
    return ExtendSse42(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  }
#endif
  return Crc32cExtendPortable(crc, data);
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, absl::string_view data) {
  // Crc32cExtendHardware falls back to the table itself where the instruction is missing.
  return crc32c_internal::Crc32cExtendHardware(crc, data);
}

}  // namespace loom::logging
