// ForkRanks: runs a function in N processes forked from this one (one per rank) and waits for
// them with a deadline — the one "fork N ranks" helper in loom, behind accelerate's
// notebook_launcher, estimate_memory --check, and the tests and benchmarks that run real ranks
// over 127.0.0.1.
//
// Contract:
//   - Child r runs fn(r) in its own process group (so stopping it also stops what it started),
//     with SIGTERM set to reach it when the forking thread ends. It exits 0 when fn returns OK;
//     otherwise it hands the Status message to the parent and exits 1. An exception that escapes
//     fn is a failure too (its what() is the message). Nothing of the parent's code runs after
//     fn in a child.
//   - The parent reaps only these children. The first rank that fails (an error Status, any
//     other exit code, a signal) makes it stop the others: SIGTERM to their process groups,
//     then SIGKILL after options.grace_period. When options.deadline passes first, every rank
//     still running is stopped the same way.
//   - Returns OK when every rank succeeded; otherwise Internal (a rank failed) or
//     DeadlineExceeded (ranks still running at the deadline), the message starting with
//     options.label and naming the rank: "LABEL: rank 1 failed (exit status 1): MESSAGE; the
//     other ranks were stopped" or "LABEL: rank 0 still running at the deadline (30s); the
//     ranks were stopped". A failed pipe()/fork() stops the ranks already started.
//   - options.outcomes, when set, receives each rank's end: its exit code, -signal, or
//     kRankStillRunning for a rank stopped at the deadline.
//   - fork() keeps only the calling thread: fork before this process starts threads (LibTorch
//     pools, Gloo), and flush nothing you do not want written twice (stdio is flushed here).
//
// Example:
//   ForkRanksOptions options;
//   options.deadline = absl::Seconds(60);
//   RETURN_IF_ERROR(ForkRanks(2, [&](int rank) { return TrainRank(rank, port); }, options));
#ifndef LOOM_BASE_FORK_RANKS_H_
#define LOOM_BASE_FORK_RANKS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace loom::base {

// A rank's outcome when it was still running at the deadline.
constexpr int kRankStillRunning = 1000;

struct ForkRanksOptions {
  absl::Duration deadline = absl::InfiniteDuration();
  absl::Duration grace_period = absl::ZeroDuration();  // SIGTERM to SIGKILL when stopping ranks
  std::string label = "ForkRanks";                     // starts every error message
  std::vector<int>* outcomes = nullptr;                // optional: one entry per rank
};

absl::Status ForkRanks(int n, const std::function<absl::Status(int rank)>& fn,
                       const ForkRanksOptions& options = {});

}  // namespace loom::base

#endif  // LOOM_BASE_FORK_RANKS_H_
