#include "runtime/parallel_context.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::runtime {
namespace {

using ::loom::base::PickFreePort;
using ::loom::distributed::testing::JoinGroup;
using ::loom::distributed::testing::RunRanks;
using ::testing::Each;

TEST(ParallelContextTest, OneProcessNeedsNoGroup) {
  args::TrainingArguments args;
  absl::StatusOr<ParallelContext> p = ParallelContext::Create(std::nullopt, args);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->world_size(), 1);
  EXPECT_TRUE(p->is_world_zero() && p->is_local_zero() && p->ShouldSave(args));
  EXPECT_FALSE(p->process_group().has_value());
  EXPECT_TRUE(p->Barrier().ok());
  absl::StatusOr<float> mean = p->MeanFloat(2.5f);
  ASSERT_TRUE(mean.ok());
  EXPECT_EQ(*mean, 2.5f);
  auto rows = p->GatherRows(at::arange(3));
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_TRUE(at::equal((*rows)[0], at::arange(3)));
}

int Child(int rank, int port, const std::string& dir) {
  absl::StatusOr<distributed::ProcessGroup> pg = JoinGroup(rank, 3, port);
  CHILD_CHECK_OK(pg.status());
  args::TrainingArguments args;
  absl::StatusOr<ParallelContext> p = ParallelContext::Create(*pg, args);
  CHILD_CHECK_OK(p.status());
  CHILD_CHECK(p->rank() == rank && p->world_size() == 3);
  CHILD_CHECK(p->ShouldSave(args) == (rank == 0));
  args.set_save_on_each_node(true);
  // Without launcher variables every rank is its own node's local rank `rank`.
  CHILD_CHECK(p->ShouldSave(args) == p->is_local_zero());

  // float32 mean over ranks: (1 + 2 + 4) / 3 in float.
  absl::StatusOr<float> mean = p->MeanFloat(static_cast<float>(1 << rank));
  CHILD_CHECK_OK(mean.status());
  CHILD_CHECK(*mean == 7.0f / 3.0f);

  // Variable-length rows in rank order.
  auto rows = p->GatherRows(at::full({rank}, rank, at::kLong));
  CHILD_CHECK_OK(rows.status());
  CHILD_CHECK(rows->size() == 3 && (*rows)[0].numel() == 0 && (*rows)[2].numel() == 2);

  std::string value = rank == 0 ? "staging-dir" : "";
  CHILD_CHECK_OK(p->BroadcastString(value));
  CHILD_CHECK(value == "staging-dir");

  // main_process_first: the main process's work is done before any other rank starts its own.
  const std::string marker = dir + "/main_done";
  CHILD_CHECK_OK(p->MainProcessFirst(/*local=*/false, [&]() -> absl::Status {
    if (rank == 0) {
      usleep(300 * 1000);
      std::ofstream(marker) << "done";
      return absl::OkStatus();
    }
    if (!std::filesystem::exists(marker)) return absl::InternalError("ran before the main one");
    return absl::OkStatus();
  }));
  // An error on one rank comes back on that rank only; the barrier still completes.
  absl::Status s = p->MainProcessFirst(false, [&]() -> absl::Status {
    return rank == 1 ? absl::InternalError("rank 1 failed") : absl::OkStatus();
  });
  CHILD_CHECK(rank == 1 ? !s.ok() : s.ok());
  CHILD_CHECK_OK(p->Barrier());
  return 0;
}

TEST(ParallelContextTest, ThreeRanksShareCollectivesAndMainProcessFirst) {
  const std::string dir = ::testing::TempDir() + "/parallel_context";
  std::filesystem::create_directories(dir);
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  EXPECT_THAT(RunRanks(3, absl::Seconds(60), [&](int rank) { return Child(rank, port, dir); }),
              Each(0));
}

}  // namespace
}  // namespace loom::runtime
