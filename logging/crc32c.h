// CRC-32C (Castagnoli): the checksum TFRecord framing (TensorBoard event files) uses.
//
// Contract:
//   Crc32c(data)               CRC-32C of `data`: reflected polynomial 0x82F63B78, initial value
//                              and final XOR 0xFFFFFFFF (the iSCSI / RFC 3720 definition).
//   Crc32cExtend(crc, data)    CRC-32C of (A + data) given crc = Crc32c(A); Crc32cExtend(0, d)
//                              equals Crc32c(d), so data can be checksummed in pieces.
//   MaskCrc32c(crc)            TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8,
//                              all in uint32 arithmetic. UnmaskCrc32c inverts it.
//
// Written by hand (a byte-at-a-time table) because no Debian 12 package provides it in a form we
// can use: there is no C/C++ crc32c -dev package (only python3-crc32c), and Debian's abseil
// 20220623 predates absl/crc. Event files are small, so speed does not matter here.
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
