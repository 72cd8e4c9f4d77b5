#include "distributed/process_group.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

using ::loom::base::PickFreePort;
using ::loom::base::testing::StatusIs;
using ::loom::distributed::testing::RunRanks;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

DistributedEnv Env(int rank, int world, int port) {
  auto env = DistributedEnvFromMap({{"RANK", std::to_string(rank)},
                                    {"WORLD_SIZE", std::to_string(world)},
                                    {"MASTER_ADDR", "127.0.0.1"},
                                    {"MASTER_PORT", std::to_string(port)}});
  return *env;
}

ProcessGroupOptions Options(const std::string& backend, absl::Duration timeout) {
  ProcessGroupOptions options;
  options.backend = backend;
  options.timeout = timeout;
  return options;
}

// These fail before any socket is opened, so they run in the test process.
TEST(ProcessGroupTest, UnsupportedBackendsAreClearErrors) {
  const DistributedEnv env = Env(0, 2, 1);
  for (const char* backend : {"mpi", "ccl", "hccl"}) {
    EXPECT_THAT(CreateProcessGroup(env, Options(backend, absl::Seconds(1))),
                StatusIs(absl::StatusCode::kUnimplemented,
                         AllOf(HasSubstr(absl::StrCat("--ddp_backend ", backend)),
                               HasSubstr("use --ddp_backend gloo"))));
  }
#ifndef LOOM_HAS_CUDA
  EXPECT_THAT(CreateProcessGroup(env, Options("nccl", absl::Seconds(1))),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("--ddp_backend nccl needs a CUDA LibTorch"),
                             HasSubstr("--config=cuda"))));
#endif
  EXPECT_THAT(CreateProcessGroup(env, Options("tcp", absl::Seconds(1))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"tcp\" is not one of")));
  EXPECT_THAT(
      CreateProcessGroup(env, Options("gloo", absl::ZeroDuration())),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--ddp_timeout must be positive")));
}

TEST(ProcessGroupTest, OptionsFromTrainingArguments) {
  loom::args::TrainingArguments args;
  ProcessGroupOptions defaults = ProcessGroupOptionsFromArgs(args);
  EXPECT_EQ(defaults.backend, "gloo");
  EXPECT_EQ(defaults.timeout, absl::Seconds(1800));
  args.set_ddp_backend("nccl");
  args.set_ddp_timeout(7);
  ProcessGroupOptions set = ProcessGroupOptionsFromArgs(args);
  EXPECT_EQ(set.backend, "nccl");
  EXPECT_EQ(set.timeout, absl::Seconds(7));
}

TEST(ProcessGroupTest, SingleProcessGroupWorks) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  auto codes = RunRanks(1, absl::Seconds(30), [&](int rank) {
    auto pg = CreateProcessGroup(Env(rank, 1, port), Options("gloo", absl::Seconds(10)));
    if (!pg.ok()) {
      std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
      return 1;
    }
    at::Tensor t = at::full({2}, 3.0);
    if (!AllReduce(*pg, t, ReduceOp::kAvg).ok() || !Barrier(*pg).ok()) return 2;
    if (pg->rank() != 0 || pg->world_size() != 1 || pg->backend_name() != "gloo") return 3;
    return at::equal(t, at::full({2}, 3.0)) ? 0 : 4;
  });
  EXPECT_THAT(codes, ElementsAre(0));
}

// GLOO_SOCKET_IFNAME picks Gloo's interface: "lo" works, an unknown one is a clear error.
TEST(ProcessGroupTest, GlooSocketIfname) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  auto codes = RunRanks(2, absl::Seconds(30), [&](int rank) {
    DistributedEnv env = Env(rank, 2, port);
    env.gloo_socket_ifname = "lo";
    auto pg = CreateProcessGroup(env, Options("gloo", absl::Seconds(10)));
    if (!pg.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, pg.status().ToString().c_str());
      return 1;
    }
    at::Tensor t = at::full({1}, rank + 1, at::kLong);
    if (!AllReduce(*pg, t).ok()) return 2;
    return t.item<int64_t>() == 3 ? 0 : 3;
  });
  EXPECT_THAT(codes, ElementsAre(0, 0));

  ASSERT_OK_AND_ASSIGN(const int port2, PickFreePort());
  ASSERT_GT(port2, 0);
  codes = RunRanks(1, absl::Seconds(30), [&](int) {
    DistributedEnv env = Env(0, 1, port2);
    env.gloo_socket_ifname = "nosuchif0";
    auto pg = CreateProcessGroup(env, Options("gloo", absl::Seconds(10)));
    std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
    if (pg.status().code() != absl::StatusCode::kInvalidArgument) return 1;
    return pg.status().message().find("GLOO_SOCKET_IFNAME=nosuchif0") != absl::string_view::npos
               ? 0
               : 2;
  });
  EXPECT_THAT(codes, ElementsAre(0));
}

// Rank 0 cannot host the store on a port another socket listens on: Unavailable at once,
// naming MASTER_ADDR:MASTER_PORT.
TEST(ProcessGroupTest, MasterPortInUseIsUnavailable) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  auto codes = RunRanks(1, absl::Seconds(30), [&](int) {
    const absl::Time start = absl::Now();
    auto pg = CreateProcessGroup(Env(0, 2, port), Options("gloo", absl::Seconds(10)));
    std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
    if (pg.status().code() != absl::StatusCode::kUnavailable) return 1;
    if (pg.status().message().find(absl::StrCat("MASTER_ADDR:MASTER_PORT=127.0.0.1:", port)) ==
        absl::string_view::npos) {
      return 2;
    }
    return absl::Now() - start < absl::Seconds(5) ? 0 : 3;
  });
  close(fd);
  EXPECT_THAT(codes, ElementsAre(0));
}

// Only one rank of two starts: creating the group fails within the timeout, naming where.
void ExpectLoneRankTimesOut(int lone_rank) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  auto codes = RunRanks(1, absl::Seconds(30), [&](int) {
    const absl::Time start = absl::Now();
    auto pg = CreateProcessGroup(Env(lone_rank, 2, port), Options("gloo", absl::Seconds(2)));
    const absl::Duration took = absl::Now() - start;
    if (pg.ok()) return 1;
    std::fprintf(stderr, "rank %d got after %s: %s\n", lone_rank,
                 absl::FormatDuration(took).c_str(), pg.status().ToString().c_str());
    const std::string message(pg.status().message());
    if (pg.status().code() != absl::StatusCode::kDeadlineExceeded) return 2;
    if (message.find(absl::StrCat("MASTER_ADDR:MASTER_PORT=127.0.0.1:", port)) ==
        std::string::npos) {
      return 3;
    }
    if (message.find("WORLD_SIZE=2") == std::string::npos) return 4;
    if (took < absl::Milliseconds(1500) || took > absl::Seconds(4)) return 5;
    return 0;
  });
  EXPECT_THAT(codes, ElementsAre(0)) << "lone rank " << lone_rank;
}

TEST(ProcessGroupTest, RendezvousWithoutPeerTimesOutOnRank0) { ExpectLoneRankTimesOut(0); }

TEST(ProcessGroupTest, RendezvousWithoutRank0TimesOutOnRank1) { ExpectLoneRankTimesOut(1); }

// Rank 1 starts 3 s before rank 0 (its connection is refused until then): both still join
// within the 6 s timeout and a collective works.
TEST(ProcessGroupTest, RankMayStartLongBeforeRank0) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  auto codes = RunRanks(2, absl::Seconds(30), [&](int rank) {
    if (rank == 0) absl::SleepFor(absl::Seconds(3));
    auto pg = CreateProcessGroup(Env(rank, 2, port), Options("gloo", absl::Seconds(6)));
    if (!pg.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, pg.status().ToString().c_str());
      return 1;
    }
    at::Tensor t = at::full({1}, rank + 1, at::kLong);
    if (!AllReduce(*pg, t).ok()) return 2;
    return t.item<int64_t>() == 3 ? 0 : 3;
  });
  EXPECT_THAT(codes, ElementsAre(0, 0));
}

// Subgroups of 4 ranks as FSDP's hybrid sharding makes them: the two "nodes" {0, 1} and
// {2, 3}, and the replicas {0, 2} and {1, 3}; collectives in each reach only its members, and
// both kinds work side by side. A non-member is refused.
TEST(ProcessGroupTest, Subgroups) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(4, absl::Seconds(60), [&](int rank) {
    auto pg = testing::JoinGroup(rank, 4, port);
    CHILD_CHECK_OK(pg.status());
    const int node = rank / 2;
    const int local = rank % 2;
    auto shard = NewSubgroup(*pg, {2 * node, 2 * node + 1}, absl::StrCat("node", node));
    CHILD_CHECK_OK(shard.status());
    auto replica = NewSubgroup(*pg, {local, local + 2}, absl::StrCat("replica", local));
    CHILD_CHECK_OK(replica.status());
    CHILD_CHECK(shard->rank() == local && shard->world_size() == 2);
    CHILD_CHECK(replica->rank() == node && replica->world_size() == 2);
    at::Tensor a = at::full({3}, static_cast<float>(rank + 1));
    CHILD_CHECK_OK(AllReduce(*shard, a));
    CHILD_CHECK(at::equal(a, at::full({3}, static_cast<float>(4 * node + 3))));
    at::Tensor b = at::full({2}, static_cast<float>(rank + 1));
    CHILD_CHECK_OK(AllReduce(*replica, b));
    CHILD_CHECK(at::equal(b, at::full({2}, static_cast<float>(2 * local + 4))));
    at::Tensor gathered = at::empty({4});
    CHILD_CHECK_OK(AllGatherInto(*shard, at::full({2}, static_cast<float>(rank)), gathered));
    CHILD_CHECK(at::equal(gathered, at::tensor({1.0f * 2 * node, 1.0f * 2 * node,
                                                1.0f * 2 * node + 1, 1.0f * 2 * node + 1})));
    // The same group made again is a new group that works.
    auto again = NewSubgroup(*pg, {2 * node, 2 * node + 1}, absl::StrCat("node", node));
    CHILD_CHECK_OK(again.status());
    at::Tensor c = at::full({1}, 1.0f);
    CHILD_CHECK_OK(AllReduce(*again, c));
    CHILD_CHECK(c.item<float>() == 2.0f);
    auto outsider = NewSubgroup(*pg, {(rank + 1) % 4}, "outsider");
    CHILD_CHECK(outsider.status().code() == absl::StatusCode::kInvalidArgument);
    CHILD_CHECK_OK(Barrier(*pg));
    return 0;
  });
  EXPECT_THAT(codes, ElementsAre(0, 0, 0, 0));
}

}  // namespace
}  // namespace loom::distributed
