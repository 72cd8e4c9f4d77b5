#include "checkpoint/folder/staged_folder.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/folder/discovery.h"
#include "checkpoint/folder/manifest.h"
#include "checkpoint/folder/names.h"
#include "checkpoint/folder/test_util.h"
#include "checkpoint/folder/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/crc32c.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using testing::CommitFolder;
using ::testing::ElementsAre;
using testing::FileMap;
using ::testing::HasSubstr;
using testing::HfFiles;
using ::testing::IsEmpty;
using testing::ListNames;
using ::testing::MatchesRegex;
using testing::NewTempDir;
using testing::ReadTree;
using testing::WriteTree;

constexpr char kStagingRegex[] = "\\.loom-staging-checkpoint-40\\.[0-9]+\\.[0-9a-f]{16}";

TEST(StagedFolderTest, CommitMakesTheFolderVisibleWithAManifest) {
  const std::string out = NewTempDir("staged") + "/output/dir";  // parents are created
  ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
  EXPECT_THAT(ListNames(out), ElementsAre(MatchesRegex(kStagingRegex)));
  EXPECT_EQ(staged.path(), out + "/" + ListNames(out)[0]);
  EXPECT_EQ(staged.final_path(), out + "/checkpoint-40");
  ASSERT_OK(staged.WriteFile("model.safetensors", "weights"));
  ASSERT_OK(staged.WriteFile("sub/dir/shard.bin", "123456789"));
  ASSERT_OK(staged.WriteFile("model.safetensors", "weights v2"));  // replaces
  // Files written directly (by any writer) count as well.
  WriteTree(staged.path(), {{"optimizer.pt", "state"}});
  EXPECT_THAT(ListNames(out), ElementsAre(MatchesRegex(kStagingRegex)));  // still hidden

  ASSERT_OK_AND_ASSIGN(CommitInfo info, staged.Commit());
  EXPECT_TRUE(staged.committed());
  EXPECT_EQ(info.path, out + "/checkpoint-40");
  EXPECT_FALSE(info.replaced_existing);
  EXPECT_EQ(info.leftover, "");
  EXPECT_THAT(info.manifest.files,
              ElementsAre(ManifestEntry{"model.safetensors", 10, logging::Crc32c("weights v2")},
                          ManifestEntry{"optimizer.pt", 5, logging::Crc32c("state")},
                          ManifestEntry{"sub/dir/shard.bin", 9, 0xe3069283u}));
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-40"));
  FileMap tree = ReadTree(out + "/checkpoint-40");
  ASSERT_EQ(tree.count("loom_manifest.json"), 1u);
  ASSERT_OK_AND_ASSIGN(Manifest on_disk, ParseManifest(tree["loom_manifest.json"]));
  EXPECT_EQ(on_disk.files, info.manifest.files);
  tree.erase("loom_manifest.json");
  EXPECT_EQ(tree, (FileMap{{"model.safetensors", "weights v2"},
                           {"optimizer.pt", "state"},
                           {"sub/dir/shard.bin", "123456789"}}));
  ASSERT_OK_AND_ASSIGN(VerifiedFolder v, VerifyFolder(out + "/checkpoint-40"));
  EXPECT_TRUE(v.has_manifest);
  EXPECT_EQ(v.files, 3);
  EXPECT_EQ(v.bytes, 24u);
}

TEST(StagedFolderTest, UncommittedFolderDisappearsOnDestruction) {
  const std::string out = NewTempDir("staged");
  {
    ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
    ASSERT_OK(staged.WriteFile("a/b/c.bin", "data"));
    EXPECT_THAT(ListNames(out), ElementsAre(MatchesRegex(kStagingRegex)));
  }
  EXPECT_THAT(ListNames(out), IsEmpty());
}

TEST(StagedFolderTest, MovedFolderIsRemovedOnceByItsLastOwner) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK_AND_ASSIGN(StagedFolder first, StagedFolder::Begin(out, "checkpoint-40"));
  const std::string path = first.path();
  {
    StagedFolder second = std::move(first);
    EXPECT_EQ(second.path(), path);
    EXPECT_TRUE(first.path().empty());
    EXPECT_THAT(first.Commit(),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("moved from")));
    EXPECT_THAT(ListNames(out), ElementsAre(MatchesRegex(kStagingRegex)));
  }
  EXPECT_THAT(ListNames(out), IsEmpty());
}

TEST(StagedFolderTest, AbortRemovesNowAndReportsErrors) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
  ASSERT_OK(staged.WriteFile("x", "y"));
  ASSERT_OK(staged.Abort());
  EXPECT_THAT(ListNames(out), IsEmpty());
  EXPECT_THAT(staged.Abort(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("cannot abort checkpoint folder")));
}

std::vector<CommitStep> CommitReplacing(const std::string& out, ReplaceMethod method,
                                        CommitInfo* info,
                                        std::vector<std::vector<std::string>>* listings) {
  std::vector<CommitStep> steps;
  StagedFolderOptions options;
  options.replace = method;
  options.after_step = [&](CommitStep step) {
    steps.push_back(step);
    listings->push_back(ListNames(out));
  };
  absl::StatusOr<CommitInfo> result = CommitFolder(out, "checkpoint-40", HfFiles("new"), options);
  EXPECT_OK(result.status());
  if (result.ok()) *info = *result;
  return steps;
}

constexpr char kReplacedRegex[] = "\\.loom-replaced-checkpoint-40\\.[0-9]+\\.[0-9a-f]{16}";

TEST(StagedFolderTest, CommitReplacesAnExistingFolderByAtomicExchange) {
  const std::string out = NewTempDir("staged");
  FileMap old_files = HfFiles("old");
  old_files["stale.bin"] = "only in the old folder";
  ASSERT_OK(CommitFolder(out, "checkpoint-40", old_files).status());
  CommitInfo info;
  std::vector<std::vector<std::string>> listings;
  EXPECT_THAT(CommitReplacing(out, ReplaceMethod::kAtomicExchange, &info, &listings),
              ElementsAre(CommitStep::kManifestWritten, CommitStep::kRenamed,
                          CommitStep::kParentSynced, CommitStep::kOldRemoved));
  // `checkpoint-40` exists at every step; only hidden names change.
  ASSERT_EQ(listings.size(), 4u);
  EXPECT_THAT(listings[0], ElementsAre(MatchesRegex(kStagingRegex), "checkpoint-40"));
  EXPECT_THAT(listings[1], ElementsAre(MatchesRegex(kStagingRegex), "checkpoint-40"));
  EXPECT_THAT(listings[2], ElementsAre(MatchesRegex(kStagingRegex), "checkpoint-40"));
  EXPECT_THAT(listings[3], ElementsAre("checkpoint-40"));
  EXPECT_TRUE(info.replaced_existing);
  EXPECT_EQ(info.replace_method, ReplaceMethod::kAtomicExchange);
  EXPECT_EQ(info.leftover, "");
  FileMap tree = ReadTree(out + "/checkpoint-40");
  tree.erase("loom_manifest.json");
  EXPECT_EQ(tree, HfFiles("new"));
  EXPECT_OK(VerifyFolder(out + "/checkpoint-40").status());
}

TEST(StagedFolderTest, CommitReplacesAnExistingFolderByRenamingItAside) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK(CommitFolder(out, "checkpoint-40", HfFiles("old")).status());
  CommitInfo info;
  std::vector<std::vector<std::string>> listings;
  EXPECT_THAT(
      CommitReplacing(out, ReplaceMethod::kRenameAside, &info, &listings),
      ElementsAre(CommitStep::kManifestWritten, CommitStep::kOldMovedAside, CommitStep::kRenamed,
                  CommitStep::kParentSynced, CommitStep::kOldRemoved));
  ASSERT_EQ(listings.size(), 5u);
  EXPECT_THAT(listings[0], ElementsAre(MatchesRegex(kStagingRegex), "checkpoint-40"));
  // The documented window: `checkpoint-40` is absent, the old folder is aside.
  EXPECT_THAT(listings[1], ElementsAre(MatchesRegex(kReplacedRegex), MatchesRegex(kStagingRegex)));
  EXPECT_THAT(listings[2], ElementsAre(MatchesRegex(kReplacedRegex), "checkpoint-40"));
  EXPECT_THAT(listings[3], ElementsAre(MatchesRegex(kReplacedRegex), "checkpoint-40"));
  EXPECT_THAT(listings[4], ElementsAre("checkpoint-40"));
  EXPECT_EQ(info.replace_method, ReplaceMethod::kRenameAside);
  FileMap tree = ReadTree(out + "/checkpoint-40");
  tree.erase("loom_manifest.json");
  EXPECT_EQ(tree, HfFiles("new"));
}

TEST(StagedFolderTest, CommitWithoutExistingFolderIsOneRename) {
  const std::string out = NewTempDir("staged");
  CommitInfo info;
  std::vector<std::vector<std::string>> listings;
  EXPECT_THAT(
      CommitReplacing(out, ReplaceMethod::kAtomicExchange, &info, &listings),
      ElementsAre(CommitStep::kManifestWritten, CommitStep::kRenamed, CommitStep::kParentSynced));
  EXPECT_THAT(listings[0], ElementsAre(MatchesRegex(kStagingRegex)));
  EXPECT_THAT(listings[1], ElementsAre("checkpoint-40"));
  EXPECT_FALSE(info.replaced_existing);
}

TEST(StagedFolderTest, WriteFileRejectsBadNames) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
  EXPECT_THAT(staged.WriteFile("", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot write '' into a staged checkpoint folder: the name is "
                                 "empty")));
  EXPECT_THAT(
      staged.WriteFile("/etc/x", "x"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("use a path relative to the folder")));
  EXPECT_THAT(staged.WriteFile("../x", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("it has an empty, '.' or '..' component")));
  EXPECT_THAT(staged.WriteFile("a//x", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("it has an empty, '.' or '..' component")));
  EXPECT_THAT(staged.WriteFile("loom_manifest.json", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the name is reserved for the manifest")));
  EXPECT_THAT(ReadTree(staged.path()), IsEmpty());
}

TEST(StagedFolderTest, BeginRejectsBadNamesAndParents) {
  const std::string out = NewTempDir("staged");
  EXPECT_THAT(StagedFolder::Begin(out, "a/b"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("invalid checkpoint folder name 'a/b': it contains '/'")));
  EXPECT_THAT(StagedFolder::Begin(out, ".hidden"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden names")));
  EXPECT_THAT(StagedFolder::Begin("", "checkpoint-1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no parent directory given for checkpoint folder "
                                 "'checkpoint-1'")));
  ASSERT_OK(base::WriteFileAtomically(out + "/file", "x"));
  EXPECT_THAT(StagedFolder::Begin(out + "/file/sub", "checkpoint-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("/file' exists and is not a directory")));
  EXPECT_THAT(ListNames(out), ElementsAre("file"));
}

TEST(StagedFolderTest, CommitTwiceAndWriteAfterCommitFail) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
  ASSERT_OK(staged.Commit().status());
  EXPECT_THAT(staged.Commit(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("checkpoint-40' was already committed")));
  EXPECT_THAT(staged.WriteFile("x", "y"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("it was already committed (or moved from)")));
  // An empty folder is a valid (empty) checkpoint: its manifest lists no files.
  EXPECT_THAT(ReadTree(out + "/checkpoint-40"), ElementsAre(::testing::Key("loom_manifest.json")));
}

TEST(StagedFolderTest, CommitRefusesToReplaceAFileOrSymlink) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK(base::WriteFileAtomically(out + "/checkpoint-40", "a file"));
  {
    ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
    EXPECT_THAT(staged.Commit(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("checkpoint-40': it exists and is not a directory, which "
                                   "loom does not replace")));
    EXPECT_FALSE(staged.committed());
  }
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-40"));  // staging removed
  ASSERT_OK(CommitFolder(out, "real", {{"a", "b"}}).status());
  ASSERT_EQ(::symlink("real", (out + "/checkpoint-50").c_str()), 0);
  EXPECT_THAT(CommitFolder(out, "checkpoint-50", {{"a", "c"}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("it exists and is a symbolic link")));
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-40", "checkpoint-50", "real"));
}

TEST(StagedFolderTest, SymlinkInsideTheFolderFailsTheCommit) {
  const std::string out = NewTempDir("staged");
  {
    ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
    ASSERT_EQ(::symlink("/etc/hostname", (staged.path() / "link").c_str()), 0);
    EXPECT_THAT(staged.Commit(), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("cannot commit checkpoint folder '" + out +
                                                    "/checkpoint-40': ")));
  }
  EXPECT_THAT(ListNames(out), IsEmpty());
}

TEST(StagedFolderTest, RemoveStaleStagingLeavesThisProcessesLiveFolderAlone) {
  const std::string out = NewTempDir("staged");
  ASSERT_OK_AND_ASSIGN(StagedFolder staged, StagedFolder::Begin(out, "checkpoint-40"));
  const std::string name = staged.path().filename().string();
  ASSERT_OK_AND_ASSIGN(StaleCleanup cleanup, RemoveStaleStaging(out));
  EXPECT_THAT(cleanup.skipped_live, ElementsAre(name));
  EXPECT_THAT(cleanup.removed, IsEmpty());
  EXPECT_THAT(ListNames(out), ElementsAre(name));
  ASSERT_OK(staged.Commit().status());
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-40"));
}

}  // namespace
}  // namespace loom::checkpoint
