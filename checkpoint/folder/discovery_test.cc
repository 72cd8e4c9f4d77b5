#include "checkpoint/folder/discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/folder/manifest.h"
#include "checkpoint/folder/staged_folder.h"
#include "checkpoint/folder/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/crc32c.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using testing::CommitFolder;
using ::testing::ElementsAre;
using testing::FileMap;
using testing::FlipByte;
using ::testing::HasSubstr;
using testing::HfFiles;
using ::testing::IsEmpty;
using testing::ListNames;
using testing::NewTempDir;
using testing::ReadTree;
using testing::Truncate;
using testing::WriteTree;

std::vector<std::string> Strings(const std::vector<SkippedCheckpoint>& skipped) {
  std::vector<std::string> out;
  for (const SkippedCheckpoint& s : skipped) out.push_back(s.ToString());
  return out;
}

std::string Crc(const std::string& s) { return FormatCrc32c(logging::Crc32c(s)); }

constexpr char kStaging80[] = ".loom-staging-checkpoint-80.4242.0123456789abcdef";
constexpr char kDeleting5[] = ".loom-deleting-checkpoint-5.7.fedcba9876543210";

// An output_dir with every kind of entry discovery must tell apart.
class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = NewTempDir("discovery");
    for (const char* name : {"checkpoint-10", "checkpoint-20", "checkpoint-30", "checkpoint-40",
                             "checkpoint-50", "checkpoint-abc", "checkpoint-70.tmp"}) {
      ASSERT_OK(CommitFolder(out_, name, HfFiles(name)).status());
    }
    FlipByte(out_ + "/checkpoint-30/optimizer.pt", 0);
    Truncate(out_ + "/checkpoint-40/model.safetensors", 10);
    ASSERT_EQ(std::remove((out_ + "/checkpoint-50/scheduler.pt").c_str()), 0);
    WriteTree(out_ + "/checkpoint-60", HfFiles("checkpoint-60"));  // HF-written: no manifest
    ASSERT_OK(base::WriteFileAtomically(out_ + "/checkpoint-99", "a regular file"));
    // What crashes leave: a complete but uncommitted staging folder and a half-deleted one.
    ASSERT_OK(CommitFolder(out_, "checkpoint-80", HfFiles("80")).status());
    ASSERT_EQ(std::rename((out_ + "/checkpoint-80").c_str(), (out_ + "/" + kStaging80).c_str()), 0);
    WriteTree(out_ + "/" + kDeleting5, {{"optimizer.pt", "half"}});
    // Not ours: never touched.
    WriteTree(out_ + "/.tmp-checkpoint-90", {{"x", "y"}});
    WriteTree(out_ + "/.cache", {{"x", "y"}});
  }

  std::string out_;
};

TEST_F(DiscoveryTest, NewestValidFolderWinsAndEveryNewerOneSaysWhyItWasSkipped) {
  ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out_));
  EXPECT_EQ(last.path, out_ + "/checkpoint-20");
  EXPECT_EQ(last.step, 20);
  EXPECT_TRUE(last.verified.has_manifest);
  EXPECT_EQ(last.verified.files, 6);
  std::string flipped = HfFiles("checkpoint-30")["optimizer.pt"];
  flipped[0] = static_cast<char>(flipped[0] ^ 0xff);
  EXPECT_THAT(Strings(last.skipped),
              ElementsAre("checkpoint-60: incomplete (no loom_manifest.json)",
                          "checkpoint-50: scheduler.pt: missing",
                          "checkpoint-40: model.safetensors: size mismatch (manifest " +
                              std::to_string(HfFiles("checkpoint-40")["model.safetensors"].size()) +
                              " bytes, file 10)",
                          "checkpoint-30: optimizer.pt: CRC32C mismatch (manifest " +
                              Crc(HfFiles("checkpoint-30")["optimizer.pt"]) + ", file " +
                              Crc(flipped) + ")"));
  EXPECT_EQ(last.skipped[0].code, absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(last.skipped[1].code, absl::StatusCode::kDataLoss);
  EXPECT_THAT(last.hidden, ElementsAre(kDeleting5, kStaging80));
}

TEST_F(DiscoveryTest, FoldersWithoutManifestCanBeAccepted) {
  DiscoveryOptions options;
  options.allow_missing_manifest = true;
  ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out_, options));
  EXPECT_EQ(last.path, out_ + "/checkpoint-60");
  EXPECT_EQ(last.step, 60);
  EXPECT_FALSE(last.verified.has_manifest);
  EXPECT_THAT(last.skipped, IsEmpty());
}

TEST_F(DiscoveryTest, RemoveStaleStagingRemovesOnlyOurLeftovers) {
  ASSERT_OK_AND_ASSIGN(StaleCleanup cleanup, RemoveStaleStaging(out_));
  EXPECT_THAT(cleanup.removed, ElementsAre(kDeleting5, kStaging80));
  EXPECT_THAT(cleanup.restored, IsEmpty());
  EXPECT_THAT(cleanup.skipped_live, IsEmpty());
  EXPECT_THAT(ListNames(out_),
              ElementsAre(".cache", ".tmp-checkpoint-90", "checkpoint-10", "checkpoint-20",
                          "checkpoint-30", "checkpoint-40", "checkpoint-50", "checkpoint-60",
                          "checkpoint-70.tmp", "checkpoint-99", "checkpoint-abc"));
  ASSERT_OK_AND_ASSIGN(StaleCleanup again, RemoveStaleStaging(out_));
  EXPECT_THAT(again.removed, IsEmpty());
  ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out_));
  EXPECT_EQ(last.path, out_ + "/checkpoint-20");
  EXPECT_THAT(last.hidden, IsEmpty());
}

TEST(DiscoveryEdgeTest, EmptyMissingAndAllCorrupt) {
  const std::string out = NewTempDir("discovery");
  ASSERT_OK_AND_ASSIGN(LastCheckpoint none, FindLastCheckpoint(out));
  EXPECT_TRUE(none.path.empty());
  EXPECT_EQ(none.step, -1);
  EXPECT_THAT(none.skipped, IsEmpty());
  EXPECT_THAT(FindLastCheckpoint(out + "/nope"),
              StatusIs(absl::StatusCode::kNotFound,
                       "output_dir '" + out + "/nope' does not exist; check --output_dir"));
  EXPECT_THAT(RemoveStaleStaging(out + "/nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nope' does not exist")));
  ASSERT_OK(CommitFolder(out, "checkpoint-1", {{"a", "b"}}).status());
  ASSERT_EQ(std::remove((out + "/checkpoint-1/a").c_str()), 0);
  ASSERT_OK_AND_ASSIGN(LastCheckpoint corrupt, FindLastCheckpoint(out));
  EXPECT_TRUE(corrupt.path.empty());
  EXPECT_THAT(Strings(corrupt.skipped), ElementsAre("checkpoint-1: a: missing"));
}

TEST(DiscoveryEdgeTest, EqualStepsPickTheFirstNameAndSymlinksCount) {
  const std::string out = NewTempDir("discovery");
  ASSERT_OK(CommitFolder(out, "checkpoint-10", {{"a", "10"}}).status());
  ASSERT_OK(CommitFolder(out, "checkpoint-010", {{"a", "010"}}).status());
  ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out));
  EXPECT_EQ(last.path, out + "/checkpoint-010");
  EXPECT_EQ(last.step, 10);
  ASSERT_OK(CommitFolder(out, "elsewhere", {{"a", "x"}}).status());
  ASSERT_EQ(::symlink("elsewhere", (out + "/checkpoint-11").c_str()), 0);
  ASSERT_OK_AND_ASSIGN(last, FindLastCheckpoint(out));
  EXPECT_EQ(last.path, out + "/checkpoint-11");
}

TEST(DiscoveryEdgeTest, RemoveStaleStagingRestoresAFolderRenamedAsideByACrash) {
  const std::string out = NewTempDir("discovery");
  // Crash between the two renames of a kRenameAside replacement of checkpoint-15: the old
  // folder is aside and the new one still staged.
  ASSERT_OK(CommitFolder(out, "checkpoint-15", HfFiles("old")).status());
  const std::string aside15 = ".loom-replaced-checkpoint-15.1.0123456789abcdef";
  ASSERT_EQ(std::rename((out + "/checkpoint-15").c_str(), (out + "/" + aside15).c_str()), 0);
  const std::string staged15 = ".loom-staging-checkpoint-15.1.1123456789abcdef";
  WriteTree(out + "/" + staged15, HfFiles("new"));
  // An aside folder whose name is taken again: the replacement finished, it is garbage.
  ASSERT_OK(CommitFolder(out, "checkpoint-20", HfFiles("20")).status());
  const std::string aside20 = ".loom-replaced-checkpoint-20.1.2123456789abcdef";
  WriteTree(out + "/" + aside20, HfFiles("old 20"));
  // An aside folder that does not verify is not restored.
  ASSERT_OK(CommitFolder(out, "checkpoint-25", HfFiles("25")).status());
  ASSERT_EQ(std::remove((out + "/checkpoint-25/optimizer.pt").c_str()), 0);
  const std::string aside25 = ".loom-replaced-checkpoint-25.1.3123456789abcdef";
  ASSERT_EQ(std::rename((out + "/checkpoint-25").c_str(), (out + "/" + aside25).c_str()), 0);
  // An HF-written folder (no manifest) that was aside is restored.
  const std::string aside30 = ".loom-replaced-checkpoint-30.1.4123456789abcdef";
  WriteTree(out + "/" + aside30, HfFiles("hf 30"));

  ASSERT_OK_AND_ASSIGN(LastCheckpoint before, FindLastCheckpoint(out));
  EXPECT_EQ(before.path, out + "/checkpoint-20");
  EXPECT_THAT(before.hidden, ElementsAre(aside15, aside20, aside25, aside30, staged15));

  ASSERT_OK_AND_ASSIGN(StaleCleanup cleanup, RemoveStaleStaging(out));
  ASSERT_EQ(cleanup.restored.size(), 2u);
  EXPECT_EQ(cleanup.restored[0].from, aside15);
  EXPECT_EQ(cleanup.restored[0].to, "checkpoint-15");
  EXPECT_EQ(cleanup.restored[1].from, aside30);
  EXPECT_EQ(cleanup.restored[1].to, "checkpoint-30");
  EXPECT_THAT(cleanup.removed, ElementsAre(aside20, aside25, staged15));
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-15", "checkpoint-20", "checkpoint-30"));
  FileMap restored = ReadTree(out + "/checkpoint-15");
  restored.erase("loom_manifest.json");
  EXPECT_EQ(restored, HfFiles("old"));
  EXPECT_EQ(ReadTree(out + "/checkpoint-30"), HfFiles("hf 30"));
}

}  // namespace
}  // namespace loom::checkpoint
