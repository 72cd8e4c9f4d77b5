#include "base/file_util.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/file_util_test_XXXXXX";
  return ::mkdtemp(d.data());
}

std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  ::closedir(d);
  return names;
}

TEST(FileUtilTest, WriteThenReadRoundTrips) {
  std::string dir = TempDir();
  std::string path = dir + "/a.bin";
  std::string bytes("x\0y\n", 4);
  ASSERT_OK(WriteFileAtomically(path, bytes));
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFile(path));
  EXPECT_EQ(got, bytes);
  // Nothing but the target is left behind.
  EXPECT_EQ(ListDir(dir), std::set<std::string>{"a.bin"});
}

TEST(FileUtilTest, ReplacesExistingFileWhole) {
  std::string dir = TempDir();
  std::string path = dir + "/state.json";
  ASSERT_OK(WriteFileAtomically(path, std::string(100000, 'a')));
  ASSERT_OK(WriteFileAtomically(path, "short"));
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFile(path));
  EXPECT_EQ(got, "short");
}

TEST(FileUtilTest, FailureLeavesOriginalUntouched) {
  std::string dir = TempDir();
  std::string path = dir + "/keep.txt";
  ASSERT_OK(WriteFileAtomically(path, "original"));
  // A directory in the way of the rename makes the write fail after the temp file.
  std::string blocked = dir + "/blocked";
  ASSERT_EQ(::mkdir(blocked.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((blocked + "/child").c_str(), 0755), 0);
  EXPECT_THAT(WriteFileAtomically(blocked, "x"), StatusIs(absl::StatusCode::kInternal,
                                                          HasSubstr("blocked")));
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFile(path));
  EXPECT_EQ(got, "original");
  EXPECT_EQ(ListDir(dir), (std::set<std::string>{"blocked", "keep.txt"}));
}

TEST(FileUtilTest, MissingDirectoryIsNotFoundNamingThePath) {
  EXPECT_THAT(WriteFileAtomically("/nonexistent_dir_xyz/f", "x"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent_dir_xyz/f")));
  EXPECT_THAT(ReadFile("/nonexistent_dir_xyz/f").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent_dir_xyz/f")));
}

TEST(FileUtilTest, MakeDirsCreatesParentsAndIsIdempotent) {
  std::string dir = TempDir();
  ASSERT_OK(MakeDirs(dir + "/a/b/c"));
  ASSERT_OK(MakeDirs(dir + "/a/b/c"));
  struct stat st;
  ASSERT_EQ(::stat((dir + "/a/b/c").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_OK(WriteFileAtomically(dir + "/file", "x"));
  EXPECT_THAT(MakeDirs(dir + "/file"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a directory")));
}

TEST(FileUtilTest, Dirname) {
  EXPECT_EQ(Dirname("a/b/c"), "a/b");
  EXPECT_EQ(Dirname("c"), ".");
  EXPECT_EQ(Dirname("/c"), "/");
}

}  // namespace
}  // namespace loom::base
