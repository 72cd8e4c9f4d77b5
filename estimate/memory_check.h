// MemoryCheck: `estimate_memory --check` — a few real training steps of a small BERT
// under each of loom's strategies, on this machine, with the per-rank model-state bytes rank 0
// measured (the strategy's StateBytes(), counted from its tensors) next to loom's estimate for
// that model (memory_estimate.h's LoomRows), so the estimate can be trusted for a bigger one.
//
// Contract: RunMemoryCheck(ranks) forks `ranks` processes per strategy (DDP, ZeRO-1, ZeRO-2,
// ZeRO-3, FSDP full_shard), joined over Gloo on 127.0.0.1 (a free port), each training 2 steps
// of the same BERT (hidden 256, 4 layers, vocabulary 1000; fp32, AdamW) on its own batch.
// Returns one row per strategy; an error names the strategy and the rank that failed. A rank
// still running after 5 minutes is hung: all are stopped and the error (DeadlineExceeded) says so.
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<CheckRow> rows, RunMemoryCheck(2));
//   std::cout << FormatCheck(rows);
#ifndef LOOM_ESTIMATE_MEMORY_CHECK_H_
#define LOOM_ESTIMATE_MEMORY_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::estimate {

struct CheckRow {
  std::string strategy;
  int64_t measured_bytes = 0;  // rank 0's StateBytes().Total() after the second step
  int64_t estimated_bytes = 0;
};

absl::StatusOr<std::vector<CheckRow>> RunMemoryCheck(int ranks);
std::string FormatCheck(const std::vector<CheckRow>& rows, int ranks);

}  // namespace loom::estimate

#endif  // LOOM_ESTIMATE_MEMORY_CHECK_H_
