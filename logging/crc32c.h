// CRC-32C (Castagnoli): the checksum of TFRecord framing (TensorBoard event files) and of
// checkpoint manifests (checkpoint/folder).
//
// Contract:
//   Crc32c(data)               CRC-32C of `data`: reflected polynomial 0x82F63B78, initial value
//                              and final XOR 0xFFFFFFFF (the iSCSI / RFC 3720 definition).
//   Crc32cExtend(crc, data)    CRC-32C of (A + data) given crc = Crc32c(A); Crc32cExtend(0, d)
//                              equals Crc32c(d), so data can be checksummed in pieces.
//   MaskCrc32c(crc)            TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8,
//                              all in uint32 arithmetic. UnmaskCrc32c inverts it.
//
// Speed: checkpoint/folder checksums every checkpoint file at commit and again at verification,
// so this runs over gigabytes. Thread-safe; no global state besides a CPU check done once. On
// x86-64 CPUs with SSE4.2 (checked once at run time with
// __builtin_cpu_supports; the function alone is compiled with target("sse4.2"), the build's flags
// are unchanged) it uses the `crc32` instruction, 8 bytes at a time in three interleaved lanes
// merged with precomputed x^(8n) mod P tables. Elsewhere (other CPUs, non-x86) it uses a
// byte-at-a-time table. Both give identical results; logging/crc32c_internal.h exposes each one
// for tests and benchmarks (`bazel run -c opt //benchmarks:crc32c_bench` prints both GB/s).
//
// Written by hand because no Debian 12 package offers a CRC32C library we can use: there is no
// C/C++ crc32c -dev package (apt-cache search crc32c finds only python3-crc32c), and Debian's
// abseil 20220623 predates absl/crc.
//
// Example:
//   uint32_t crc = Crc32c("123456789");            // 0xE3069283
//   uint32_t masked = MaskCrc32c(crc);             // what a TFRecord stores
#ifndef LOOM_LOGGING_CRC32C_H_
#define LOOM_LOGGING_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace loom::logging {

// CRC-32C of (A + data) where crc == Crc32c(A) (0 for the empty A).
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);

// CRC-32C of `data`.
inline uint32_t Crc32c(absl::string_view data) { return Crc32cExtend(0, data); }

// TFRecord's masking of a stored CRC, and its inverse.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace loom::logging

#endif  // LOOM_LOGGING_CRC32C_H_
