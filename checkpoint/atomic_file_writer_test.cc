#include "checkpoint/atomic_file_writer.h"

#include <dirent.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempDir() {
  std::string tmpl = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/atomic.XXXXXX";
  return mkdtemp(tmpl.data());
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFileWriterTest, AppendsAndCommits) {
  const std::string dir = TempDir();
  const std::string path = dir + "/f.bin";
  ASSERT_OK(base::WriteFileAtomically(path, "old"));
  {
    ASSERT_OK_AND_ASSIGN(AtomicFileWriter out, AtomicFileWriter::Create(path));
    ASSERT_OK(out.Append("hello "));
    ASSERT_OK(out.Append(std::string("wor\0ld", 6)));
    EXPECT_EQ(out.bytes_written(), 12u);
    // Not visible before Commit.
    EXPECT_THAT(base::ReadFile(path), ::loom::base::testing::IsOkAndHolds("old"));
    EXPECT_THAT(Listing(dir).size(), 2u);
    ASSERT_OK(out.Commit());
    EXPECT_THAT(out.Append("x"), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          HasSubstr("after it was committed")));
  }
  EXPECT_THAT(base::ReadFile(path),
              ::loom::base::testing::IsOkAndHolds(std::string("hello wor\0ld", 12)));
  EXPECT_THAT(Listing(dir), ElementsAre("f.bin"));
}

TEST(AtomicFileWriterTest, WritesAtOffsetsInAnyOrder) {
  const std::string dir = TempDir();
  const std::string path = dir + "/f.bin";
  {
    ASSERT_OK_AND_ASSIGN(AtomicFileWriter out, AtomicFileWriter::Create(path));
    ASSERT_OK(out.WriteAt(6, "world"));
    ASSERT_OK(out.WriteAt(0, "hello"));
    ASSERT_OK(out.WriteAt(13, "!"));  // past the end: the gap reads as zeros
    ASSERT_OK(out.Commit());
    EXPECT_THAT(out.WriteAt(0, "x"), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("after it was committed")));
  }
  EXPECT_THAT(base::ReadFile(path), ::loom::base::testing::IsOkAndHolds(
                                        std::string("hello\0world\0\0!", 14)));
}

TEST(AtomicFileWriterTest, AbandonedWriterLeavesNothing) {
  const std::string dir = TempDir();
  const std::string path = dir + "/f.bin";
  ASSERT_OK(base::WriteFileAtomically(path, "old"));
  {
    ASSERT_OK_AND_ASSIGN(AtomicFileWriter out, AtomicFileWriter::Create(path));
    ASSERT_OK(out.Append("new"));
    AtomicFileWriter moved = std::move(out);  // the moved-from writer owns nothing
    ASSERT_OK(moved.Append("er"));
  }
  EXPECT_THAT(base::ReadFile(path), ::loom::base::testing::IsOkAndHolds("old"));
  EXPECT_THAT(Listing(dir), ElementsAre("f.bin"));
}

TEST(AtomicFileWriterTest, MissingDirectoryIsNotFound) {
  EXPECT_THAT(AtomicFileWriter::Create(TempDir() + "/no/such/f.bin").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/no/such/f.bin")));
}

}  // namespace
}  // namespace loom::checkpoint
