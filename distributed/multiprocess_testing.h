// Test helpers: run N real ranks as forked processes talking over 127.0.0.1 (testonly).
//
// Contract:
//   - JoinGroup(rank, world, port, timeout): this child's ProcessGroup over 127.0.0.1:port.
//   - CHILD_CHECK(cond) / CHILD_CHECK_OK(status): in a child function with an `int rank` in
//     scope, print the failed check (file, line, rank) to stderr and return 1.
//   - RunRanks(n, deadline, fn): base::ForkRanks for children that return an int (0 = pass; a
//     failing child prints why to stderr): child r runs fn(r). The first failing rank stops the
//     others, and so does the deadline. Returns one outcome per rank: 0 for a pass, 1 for a
//     failure (the returned code and the rank are printed to stderr), -signal for a rank stopped
//     or killed, or kTimedOut for one still running at the deadline. Fork before anything in
//     the parent starts threads (LibTorch pools, Gloo).
//   The free port comes from base::PickFreePort (base/free_port.h).
//
// Example:
//   ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
//   auto codes = RunRanks(2, absl::Seconds(30), [&](int rank) { return Child(rank, port); });
//   EXPECT_THAT(codes, Each(0));
#ifndef LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_
#define LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_

#include <cstdio>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/fork_ranks.h"
#include "distributed/process_group.h"

#define CHILD_CHECK(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", rank, __FILE__, __LINE__, #cond); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define CHILD_CHECK_OK(expr)                                                 \
  do {                                                                       \
    const absl::Status child_status_ = (expr);                               \
    if (!child_status_.ok()) {                                               \
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, \
                   child_status_.ToString().c_str());                        \
      return 1;                                                              \
    }                                                                        \
  } while (0)

namespace loom::distributed::testing {

constexpr int kTimedOut = base::kRankStillRunning;

absl::StatusOr<ProcessGroup> JoinGroup(int rank, int world, int port,
                                       absl::Duration timeout = absl::Seconds(20));

std::vector<int> RunRanks(int n, absl::Duration deadline, const std::function<int(int)>& fn);

}  // namespace loom::distributed::testing

#endif  // LOOM_DISTRIBUTED_MULTIPROCESS_TESTING_H_
