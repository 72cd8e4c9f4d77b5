#include "checkpoint/folder/verify.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/folder/manifest.h"
#include "checkpoint/folder/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/crc32c.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using testing::CommitFolder;
using testing::FileMap;
using testing::FlipByte;
using ::testing::HasSubstr;
using testing::HfFiles;
using testing::NewTempDir;
using testing::Truncate;
using testing::WriteTree;

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = NewTempDir("verify");
    dir_ = out_ + "/checkpoint-10";
    files_ = HfFiles("ten");
    ASSERT_OK(CommitFolder(out_, "checkpoint-10", files_).status());
  }
  std::string out_, dir_;
  FileMap files_;
};

TEST_F(VerifyTest, CompleteFolderVerifies) {
  ASSERT_OK_AND_ASSIGN(VerifiedFolder v, VerifyFolder(dir_));
  EXPECT_TRUE(v.has_manifest);
  EXPECT_EQ(v.files, 6);
  uint64_t bytes = 0;
  for (const auto& [name, contents] : files_) bytes += contents.size();
  EXPECT_EQ(v.bytes, bytes);
  // Files the manifest does not list are ignored.
  WriteTree(dir_, {{"README.md", "added later"}});
  EXPECT_OK(VerifyFolder(dir_).status());
}

TEST_F(VerifyTest, FlippedByteIsACrcMismatchNamingTheFile) {
  FlipByte(dir_ + "/optimizer.pt", 3);
  std::string flipped = files_["optimizer.pt"];
  flipped[3] = static_cast<char>(flipped[3] ^ 0xff);
  const std::string reason = "optimizer.pt: CRC32C mismatch (manifest " +
                             FormatCrc32c(logging::Crc32c(files_["optimizer.pt"])) + ", file " +
                             FormatCrc32c(logging::Crc32c(flipped)) + ")";
  FolderCheck check = CheckFolder(dir_);
  EXPECT_EQ(check.code, absl::StatusCode::kDataLoss);
  EXPECT_EQ(check.reason, reason);
  EXPECT_THAT(VerifyFolder(dir_),
              StatusIs(absl::StatusCode::kDataLoss,
                       "checkpoint folder '" + dir_ + "' failed verification: " + reason +
                           "; the folder changed after it was saved (disk corruption, an "
                           "interrupted copy, or an edit): restore it from a copy or resume "
                           "from another checkpoint"));
}

TEST_F(VerifyTest, TruncatedMissingAndReplacedFilesAreAllListedInManifestOrder) {
  Truncate(dir_ + "/model.safetensors", 100);
  ASSERT_EQ(std::remove((dir_ + "/scheduler.pt").c_str()), 0);
  ASSERT_EQ(std::remove((dir_ + "/rng_state.pth").c_str()), 0);
  ASSERT_EQ(::mkdir((dir_ + "/rng_state.pth").c_str(), 0755), 0);
  FolderCheck check = CheckFolder(dir_);
  EXPECT_EQ(check.code, absl::StatusCode::kDataLoss);
  EXPECT_EQ(check.reason, "model.safetensors: size mismatch (manifest " +
                              std::to_string(files_["model.safetensors"].size()) +
                              " bytes, file 100); rng_state.pth: not a regular file; "
                              "scheduler.pt: missing");
}

TEST_F(VerifyTest, MissingManifestIsIncompleteUnlessAllowed) {
  ASSERT_EQ(std::remove((dir_ + "/loom_manifest.json").c_str()), 0);
  FolderCheck check = CheckFolder(dir_);
  EXPECT_EQ(check.code, absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(check.reason, "incomplete (no loom_manifest.json)");
  EXPECT_THAT(VerifyFolder(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint folder '" + dir_ +
                                 "' failed verification: incomplete (no loom_manifest.json); "
                                 "the save that wrote it did not finish")));
  VerifyOptions allow;
  allow.allow_missing_manifest = true;
  ASSERT_OK_AND_ASSIGN(VerifiedFolder v, VerifyFolder(dir_, allow));
  EXPECT_FALSE(v.has_manifest);
  EXPECT_EQ(v.files, 0);
  // allow_missing_manifest does not excuse a bad manifest.
  ASSERT_OK(base::WriteFileAtomically(dir_ + "/loom_manifest.json", "{\"format\": "));
  EXPECT_THAT(VerifyFolder(dir_, allow),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("failed verification: loom_manifest.json is malformed: not "
                                 "valid JSON (truncated or overwritten?)")));
}

TEST_F(VerifyTest, MissingFolderAndNonDirectory) {
  FolderCheck missing = CheckFolder(out_ + "/checkpoint-99");
  EXPECT_EQ(missing.code, absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.reason, "folder does not exist");
  EXPECT_THAT(VerifyFolder(out_ + "/checkpoint-99"),
              StatusIs(absl::StatusCode::kNotFound,
                       "checkpoint folder '" + out_ +
                           "/checkpoint-99' failed verification: folder does not exist; check "
                           "the path (resume_from_checkpoint / output_dir)"));
  VerifyOptions allow;
  allow.allow_missing_manifest = true;
  EXPECT_THAT(VerifyFolder(out_ + "/checkpoint-99", allow),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("folder does not exist")));
  ASSERT_OK(base::WriteFileAtomically(out_ + "/checkpoint-98", "x"));
  FolderCheck file = CheckFolder(out_ + "/checkpoint-98", allow);
  EXPECT_EQ(file.code, absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(file.reason, "not a directory");
}

}  // namespace
}  // namespace loom::checkpoint
