// Test helpers: run N real ranks as forked processes talking over 127.0.0.1 (testonly).
//
// Contract:
//   - PickFreePort(): binds 127.0.0.1:0 and returns the port the kernel chose (-1 on failure).
//   - RunRanks(n, deadline, fn): forks n children; child r runs fn(r) and exits with its result
//     (0 = pass; a failing child prints why to stderr). Children still running at the deadline
//     are SIGKILLed. Returns one outcome per rank: the exit code, or -signal, or kTimedOut.
//     Fork before anything in the parent starts threads (LibTorch pools, Gloo).
//
// Example:
//   const int port = PickFreePort();
//   auto codes = RunRanks(2, absl::Seconds(30), [&](int rank) { return Child(rank, port); });
//   EXPECT_THAT(codes, Each(0));
#ifndef LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_
#define LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_

#include <functional>
#include <vector>

#include "absl/time/time.h"

namespace loom::distributed::testing {

constexpr int kTimedOut = 1000;

int PickFreePort();

std::vector<int> RunRanks(int n, absl::Duration deadline, const std::function<int(int)>& fn);

}  // namespace loom::distributed::testing

#endif  // LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_
