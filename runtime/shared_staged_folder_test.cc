#include "runtime/shared_staged_folder.h"

#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::runtime {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Parent(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

TEST(SharedStagedFolderTest, CommitsWhatWasWrittenThenRunsAfterCommit) {
  ParallelContext parallel;  // one process: it is the saver
  args::TrainingArguments args;
  const std::string parent = Parent("ok");
  ASSERT_OK_AND_ASSIGN(SharedStagedFolder folder,
                       SharedStagedFolder::Begin(parallel, args, parent, "checkpoint-1", "save"));
  EXPECT_TRUE(folder.saver());
  EXPECT_NE(folder.path(), parent + "/checkpoint-1");  // staged elsewhere until committed
  ASSERT_OK(base::WriteFileAtomically(folder.path() + "/a.txt", "a"));
  EXPECT_FALSE(std::filesystem::exists(parent + "/checkpoint-1"));
  bool after = false;
  ASSERT_OK(folder.Commit(absl::OkStatus(), [&] {
    after = std::filesystem::exists(parent + "/checkpoint-1/a.txt");
    return absl::OkStatus();
  }));
  EXPECT_TRUE(after);
}

TEST(SharedStagedFolderTest, AFailedWriteIsNotCommittedAndNamesWhat) {
  ParallelContext parallel;
  args::TrainingArguments args;
  const std::string parent = Parent("failed");
  ASSERT_OK_AND_ASSIGN(SharedStagedFolder folder,
                       SharedStagedFolder::Begin(parallel, args, parent, "checkpoint-2",
                                                 parent + "/checkpoint-2"));
  bool after = false;
  EXPECT_THAT(folder.Commit(absl::ResourceExhaustedError("disk full"),
                            [&] {
                              after = true;
                              return absl::OkStatus();
                            }),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(parent + "/checkpoint-2")));
  EXPECT_FALSE(after);
  EXPECT_FALSE(std::filesystem::exists(parent + "/checkpoint-2"));
  // after_commit's failure is the commit's error (the folder itself is committed).
  ASSERT_OK_AND_ASSIGN(SharedStagedFolder again,
                       SharedStagedFolder::Begin(parallel, args, parent, "checkpoint-3", "save"));
  EXPECT_THAT(again.Commit(absl::OkStatus(), [] { return absl::UnavailableError("push"); }),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("save: push")));
  EXPECT_TRUE(std::filesystem::exists(parent + "/checkpoint-3"));
}

}  // namespace
}  // namespace loom::runtime
