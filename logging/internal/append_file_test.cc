#include "logging/internal/append_file.h"

#include <stdlib.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging::internal {
namespace {

using ::loom::base::testing::IsOk;
using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/append_file_test_XXXXXX";
  return ::mkdtemp(d.data());
}

TEST(AppendFileTest, CreatesParentsAndAppendsAcrossOpens) {
  const std::string path = TempDir() + "/a/b/log.jsonl";
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendFile> f, AppendFile::OpenForAppend(path));
    EXPECT_EQ(f->path(), path);
    ASSERT_OK(f->Append("one\n"));
    ASSERT_OK(f->Flush());
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendFile> f, AppendFile::OpenForAppend(path));
    ASSERT_OK(f->Append(std::string("tw\0o\n", 5)));
  }
  EXPECT_THAT(base::ReadFile(path), IsOkAndHolds(std::string("one\ntw\0o\n", 9)));
}

TEST(AppendFileTest, CreateNewRefusesAnExistingFile) {
  const std::string path = TempDir() + "/events";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AppendFile> f, AppendFile::CreateNew(path));
  EXPECT_THAT(AppendFile::CreateNew(path),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(path)));
}

TEST(AppendFileTest, DirectoryIsNotAFileAndTheErrorNamesIt) {
  const std::string dir = TempDir();
  EXPECT_THAT(AppendFile::OpenForAppend(dir), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                       HasSubstr("cannot open '" + dir + "'")));
}

TEST(AppendFileTest, ParentThatIsAFileFails) {
  const std::string dir = TempDir();
  ASSERT_THAT(base::WriteFileAtomically(dir + "/plain", "x"), IsOk());
  EXPECT_THAT(AppendFile::OpenForAppend(dir + "/plain/x.jsonl").status(), ::testing::Not(IsOk()));
}

}  // namespace
}  // namespace loom::logging::internal
