// CpuMemoryLimit: a cap on the bytes of CPU tensor memory one process may hold — what a
// device's memory size is to a GPU run, for CPU runs and tests (so that a model whose full
// training state does not fit one rank's budget trains sharded and fails clearly replicated).
//
// Contract:
//   - ParseMemorySize("350MB") / ("1.5GiB") / ("1000000"): bytes; the suffixes B, KB, MB, GB,
//     TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024), any case; InvalidArgument
//     otherwise.
//   - InstallCpuMemoryLimitFromEnv(): when LOOM_CPU_MEMORY_LIMIT is set (and not empty), wraps
//     LibTorch's CPU allocator so that an allocation that would take this process's live CPU
//     tensor bytes (counted from installation on) past the limit throws c10::OutOfMemoryError
//     with the allocator's own wording ("DefaultCPUAllocator: can't allocate memory: you tried
//     to allocate N bytes", which accelerate's find_executable_batch_size recognises), adding
//     how much is held and the limit. Returns the limit (0 when unset); InvalidArgument naming
//     the variable for a bad value. Call it once, first thing in main(): the allocator is a
//     process-wide LibTorch setting, and memory allocated before is not counted.
//   - ChargeCpuMemory(bytes) / RefundCpuMemory(bytes): memory a component allocates outside
//     LibTorch's allocator (aio's O_DIRECT buffers for NVMe offload) counted as tensor memory:
//     Charge throws the allocator's c10::OutOfMemoryError when it would pass the limit, Refund
//     gives the bytes back; both are no-ops without a limit.
//   - CurrentCpuMemoryStats(): once the limit is installed, the limit, the live bytes and the
//     most held at once since installation or the last ResetCpuMemoryPeak(); nullopt without
//     a limit (nothing is counted then).
//
// Example (a main()):
//   absl::StatusOr<int64_t> limit = loom::base::InstallCpuMemoryLimitFromEnv();
//   if (!limit.ok()) { std::cerr << limit.status().message() << "\n"; return 2; }
#ifndef LOOM_BASE_CPU_MEMORY_LIMIT_H_
#define LOOM_BASE_CPU_MEMORY_LIMIT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::base {

inline constexpr char kCpuMemoryLimitEnv[] = "LOOM_CPU_MEMORY_LIMIT";

struct CpuMemoryStats {
  int64_t limit = 0;
  int64_t live = 0;
  int64_t peak = 0;
};

absl::StatusOr<int64_t> ParseMemorySize(absl::string_view text);
std::optional<CpuMemoryStats> CurrentCpuMemoryStats();
void ChargeCpuMemory(int64_t bytes);
void RefundCpuMemory(int64_t bytes);
void ResetCpuMemoryPeak();
absl::StatusOr<int64_t> InstallCpuMemoryLimitFromEnv();

}  // namespace loom::base

#endif  // LOOM_BASE_CPU_MEMORY_LIMIT_H_
