#include "examples/script_resume.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "checkpoint/folder/names.h"
#include "checkpoint/folder/staged_folder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

class ResumeFromArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    args_.set_output_dir(dir_);
    args_.set_do_train(true);
  }
  void Checkpoint(int step) {
    auto staged = checkpoint::StagedFolder::Begin(dir_, checkpoint::CheckpointFolderName(step));
    ASSERT_TRUE(staged.ok()) << staged.status();
    ASSERT_TRUE(staged->WriteFile("trainer_state.json", "{}").ok());
    ASSERT_TRUE(staged->Commit().ok());
  }
  std::string dir_;
  args::TrainingArguments args_;
};

TEST_F(ResumeFromArgsTest, MissingOrEmptyOutputDirStartsFresh) {
  auto r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  std::filesystem::create_directories(dir_);
  r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(ResumeFromArgsTest, NonEmptyDirWithoutCheckpointIsRefused) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ + "/notes.txt") << "x";
  EXPECT_THAT(ResumeFromArgs(args_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("already exists and is not empty. Use --overwrite_output_dir")));
  args_.set_overwrite_output_dir(true);
  auto r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(ResumeFromArgsTest, ACheckpointResumesTheLatestWithoutTouchingTheDir) {
  Checkpoint(5);
  const std::string leftover =
      dir_ + "/" + checkpoint::HiddenFolderName(checkpoint::HiddenKind::kStaging, "checkpoint-9");
  std::filesystem::create_directories(leftover);
  auto r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  EXPECT_TRUE((*r)->latest);
  EXPECT_TRUE(std::filesystem::exists(leftover));  // read-only: the Trainer cleans up
}

TEST_F(ResumeFromArgsTest, LeftoversAloneDoNotCount) {
  std::filesystem::create_directories(
      dir_ + "/" + checkpoint::HiddenFolderName(checkpoint::HiddenKind::kStaging, "checkpoint-3"));
  auto r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->has_value());
  // ... unless one may hold the only complete copy of a replaced folder.
  std::filesystem::create_directories(
      dir_ + "/" + checkpoint::HiddenFolderName(checkpoint::HiddenKind::kReplaced, "checkpoint-3"));
  r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  EXPECT_TRUE((*r)->latest);
}

TEST_F(ResumeFromArgsTest, ExplicitCheckpointAndNoTrainingWin) {
  Checkpoint(5);
  args_.set_resume_from_checkpoint("/somewhere/checkpoint-7");
  auto r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->path, "/somewhere/checkpoint-7");
  args_.clear_resume_from_checkpoint();
  args_.set_do_train(false);
  r = ResumeFromArgs(args_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

}  // namespace
}  // namespace loom::examples
