#include "distributed/peer_check.h"

#include <signal.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "distributed/process_group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

using ::loom::base::PickFreePort;
using ::loom::distributed::testing::JoinGroup;
using ::loom::distributed::testing::RunRanks;
using ::testing::Each;

constexpr absl::Duration kTimeout = absl::Seconds(3);

// Ranks 0 and 1 all-reduce; rank `culprit` joins and then never takes part (it sleeps, or stops
// itself with SIGSTOP, or exits). The others' errors must name it, within the timeout + 3 s.
int RunRank(int rank, int port, int culprit, const char* how) {
  absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 3, port, kTimeout);
  CHILD_CHECK_OK(pg.status());
  if (rank == culprit) {
    if (std::string(how) == "stop") raise(SIGSTOP);
    if (std::string(how) == "exit") _exit(0);
    absl::SleepFor(kTimeout + absl::Seconds(6));  // hung: alive, holding its connections
    return 0;
  }
  at::Tensor t = at::ones({4});
  const absl::Time start = absl::Now();
  const absl::Status status = AllReduce(*pg, t, ReduceOp::kSum);
  const absl::Duration took = absl::Now() - start;
  std::fprintf(stderr, "rank %d (%s): %s after %s\n", rank, how, status.ToString().c_str(),
               absl::FormatDuration(took).c_str());
  CHILD_CHECK(!status.ok());
  CHILD_CHECK(took <= kTimeout + absl::Seconds(6));  // + the 2 s report window + 1 s, + slack
  const std::string want =
      culprit == 0 ? "the rendezvous store (hosted by rank 0) does not answer either: rank 0 is "
                     "stopped, hung or unreachable, or this rank is cut off"
                   : absl::StrCat("rank ", culprit, " did not report the failure within 2s");
  CHILD_CHECK(absl::StrContains(status.message(), want));
  return 0;
}

TEST(PeerCheckTest, AHungRankIsNamed) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  const std::vector<int> codes =
      RunRanks(3, absl::Seconds(30), [&](int rank) { return RunRank(rank, port, 2, "hang"); });
  EXPECT_THAT(codes, Each(0));
}

TEST(PeerCheckTest, ADeadRankIsNamed) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  const std::vector<int> codes =
      RunRanks(3, absl::Seconds(30), [&](int rank) { return RunRank(rank, port, 2, "exit"); });
  EXPECT_THAT(codes, Each(0));
}

// Rank 0 hosts the store: when it is the one stopped, the store is silent too.
TEST(PeerCheckTest, AStoppedStoreHostIsNamed) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  const std::vector<int> codes =
      RunRanks(3, absl::Seconds(12), [&](int rank) { return RunRank(rank, port, 0, "stop"); });
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], 0);
}

TEST(PeerCheckTest, EveryRankReporting) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  const std::vector<int> codes = RunRanks(3, absl::Seconds(30), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 3, port, kTimeout);
    CHILD_CHECK_OK(pg.status());
    const std::string report = UnresponsivePeers(*pg, absl::Seconds(5));
    CHILD_CHECK(report == "every other rank saw the failure too");
    CHILD_CHECK_OK(Barrier(*pg));
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

}  // namespace
}  // namespace loom::distributed
