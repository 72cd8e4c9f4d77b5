// ScratchFolder: removed at destruction; removed when the process is killed by SIGTERM or
// SIGINT (a forked child, signalled by the parent) with the child still dying of that signal;
// errors for a missing or non-folder parent.
#include "base/scratch_folder.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }
bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

TEST(ScratchFolderTest, RemovedAtDestruction) {
  std::string path;
  {
    ASSERT_OK_AND_ASSIGN(auto folder, ScratchFolder::Create(Tmp(), "swap"));
    path = folder->path();
    EXPECT_THAT(path, HasSubstr(Tmp() + "/swap-"));
    for (int i = 0; i < 300; ++i) std::ofstream(path + "/f" + std::to_string(i)) << i;
    ASSERT_OK_AND_ASSIGN(auto second, ScratchFolder::Create(Tmp(), "swap"));
    EXPECT_NE(second->path(), path);
  }
  EXPECT_FALSE(Exists(path));
}

TEST(ScratchFolderTest, RemovedWhenKilled) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const std::string marker = Tmp() + "/path-" + std::to_string(sig);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto folder = ScratchFolder::Create(Tmp(), "killed");
      if (!folder.ok()) ::_exit(3);
      for (int i = 0; i < 50; ++i) std::ofstream((*folder)->path() + "/x" + std::to_string(i)) << i;
      std::ofstream(marker) << (*folder)->path();
      for (;;) ::pause();
    }
    std::string path;
    for (int i = 0; i < 500 && path.empty(); ++i) {
      ::usleep(10000);
      std::ifstream(marker) >> path;
    }
    ASSERT_FALSE(path.empty()) << "the child made no folder";
    ASSERT_TRUE(Exists(path + "/x49"));
    ::kill(child, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    EXPECT_FALSE(Exists(path)) << path << " left after signal " << sig;
  }
}

TEST(ScratchFolderTest, Errors) {
  EXPECT_THAT(ScratchFolder::Create(Tmp() + "/missing", "s"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
  std::ofstream(Tmp() + "/file") << "x";
  EXPECT_THAT(ScratchFolder::Create(Tmp() + "/file", "s"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a folder")));
}

}  // namespace
}  // namespace loom::base
