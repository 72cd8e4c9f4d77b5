#include "base/fork_ranks.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ForkRanksOptions WithDeadline(absl::Duration deadline, std::vector<int>* outcomes = nullptr) {
  ForkRanksOptions options;
  options.deadline = deadline;
  options.label = "test";
  options.outcomes = outcomes;
  return options;
}

TEST(ForkRanksTest, EveryRankRunsInItsOwnProcess) {
  const std::string dir = ::testing::TempDir();
  const pid_t parent = ::getpid();
  std::vector<int> outcomes;
  ASSERT_OK(ForkRanks(
      3,
      [&](int rank) {
        if (::getpid() == parent) return absl::InternalError("ran in the parent");
        std::FILE* f = std::fopen(absl::StrCat(dir, "/fork_ranks_", rank).c_str(), "w");
        if (f == nullptr) return absl::InternalError("cannot write");
        std::fclose(f);
        return absl::OkStatus();
      },
      WithDeadline(absl::Seconds(30), &outcomes)));
  EXPECT_THAT(outcomes, ElementsAre(0, 0, 0));
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(std::remove(absl::StrCat(dir, "/fork_ranks_", rank).c_str()), 0) << rank;
  }
}

TEST(ForkRanksTest, AFailingRankStopsTheOthersAndIsNamedWithItsMessage) {
  const absl::Time start = absl::Now();
  std::vector<int> outcomes;
  absl::Status status = ForkRanks(
      3,
      [](int rank) {
        if (rank == 1) return absl::NotFoundError("rank one gave up");
        absl::SleepFor(absl::Seconds(60));  // a peer waiting for rank 1
        return absl::OkStatus();
      },
      WithDeadline(absl::Seconds(120), &outcomes));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInternal,
                               AllOf(HasSubstr("test: rank 1 failed (exit status 1)"),
                                     HasSubstr("rank one gave up"),
                                     HasSubstr("the other ranks were stopped"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_THAT(outcomes, ElementsAre(-SIGTERM, 1, -SIGTERM));
}

TEST(ForkRanksTest, AHungRankIsStoppedAtTheDeadline) {
  const absl::Time start = absl::Now();
  std::vector<int> outcomes;
  absl::Status status = ForkRanks(
      2,
      [](int rank) {
        if (rank == 1) {
          for (;;) ::pause();  // hangs; SIGTERM ends it
        }
        return absl::OkStatus();
      },
      WithDeadline(absl::Seconds(1), &outcomes));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("test: rank 1 still running at the deadline")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_THAT(outcomes, ElementsAre(0, kRankStillRunning));
}

TEST(ForkRanksTest, ARankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  ForkRanksOptions options = WithDeadline(absl::Milliseconds(200));
  options.grace_period = absl::Milliseconds(200);
  absl::Status status = ForkRanks(
      1,
      [](int) {
        ::signal(SIGTERM, SIG_IGN);
        for (;;) ::pause();
        return absl::OkStatus();
      },
      options);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("rank 0")));
}

TEST(ForkRanksTest, AnExceptionOrASignalIsAFailure) {
  EXPECT_THAT(ForkRanks(
                  1, [](int) -> absl::Status { throw std::runtime_error("boom"); },
                  WithDeadline(absl::Seconds(30))),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("rank 0 failed"), HasSubstr("threw: boom"))));
  EXPECT_THAT(ForkRanks(
                  1,
                  [](int) {
                    ::raise(SIGKILL);
                    return absl::OkStatus();
                  },
                  WithDeadline(absl::Seconds(30))),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("killed by signal 9")));
}

TEST(ForkRanksTest, NoRanksIsInvalid) {
  EXPECT_THAT(ForkRanks(0, [](int) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no ranks")));
}

}  // namespace
}  // namespace loom::base
