// The two implementations behind Crc32cExtend (logging/crc32c.h), exposed so that tests can check
// them against each other and benchmarks can time them side by side. Callers use crc32c.h.
//
// Contract (both functions take and return the same values as Crc32cExtend):
//   Crc32cExtendPortable(crc, data)  the byte-at-a-time table version; plain C++, every platform.
//   HardwareCrc32cAvailable()        true on x86-64 CPUs with SSE4.2 (decided once, at run time).
//   Crc32cExtendHardware(crc, data)  the SSE4.2 `crc32` instruction, 8 bytes at a time in three
//                                    interleaved lanes (see crc32c.cc). Safe to call anywhere:
//                                    where HardwareCrc32cAvailable() is false (non-x86, or no
//                                    SSE4.2) it runs Crc32cExtendPortable. This is exactly what
//                                    Crc32cExtend does.
#ifndef LOOM_LOGGING_CRC32C_INTERNAL_H_
#define LOOM_LOGGING_CRC32C_INTERNAL_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace loom::logging::crc32c_internal {

uint32_t Crc32cExtendPortable(uint32_t crc, absl::string_view data);

bool HardwareCrc32cAvailable();

uint32_t Crc32cExtendHardware(uint32_t crc, absl::string_view data);

}  // namespace loom::logging::crc32c_internal

#endif  // LOOM_LOGGING_CRC32C_INTERNAL_H_
