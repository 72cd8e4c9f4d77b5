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

// SIGKILL cannot be handled: the folder stays, and the next Create in the same parent removes
// it — but never a live folder of another process, nor a folder that is not a ScratchFolder.
TEST(ScratchFolderTest, AKilledProcesssFolderGoesWithTheNextCreate) {
  const std::string parent = Tmp() + "/sigkill";
  ASSERT_EQ(::mkdir(parent.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((parent + "/users-folder-AAAAAA").c_str(), 0700), 0);
  std::ofstream(parent + "/users-folder-AAAAAA/keep") << "x";
  std::string paths[2];
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    const std::string marker = Tmp() + "/sigkill-path-" + std::to_string(c);
    children[c] = ::fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      auto folder = ScratchFolder::Create(parent, "swap-rank" + std::to_string(c));
      if (!folder.ok()) ::_exit(3);
      for (int i = 0; i < 20; ++i) std::ofstream((*folder)->path() + "/x" + std::to_string(i)) << i;
      std::ofstream(marker) << (*folder)->path();
      for (;;) ::pause();
    }
    for (int i = 0; i < 500 && paths[c].empty(); ++i) {
      ::usleep(10000);
      std::ifstream(marker) >> paths[c];
    }
    ASSERT_FALSE(paths[c].empty()) << "child " << c << " made no folder";
  }
  ::kill(children[0], SIGKILL);  // child 1 lives on
  ASSERT_EQ(::waitpid(children[0], nullptr, 0), children[0]);
  ASSERT_TRUE(Exists(paths[0] + "/x19"));

  ASSERT_OK_AND_ASSIGN(auto folder, ScratchFolder::Create(parent, "swap-rank0"));
  EXPECT_FALSE(Exists(paths[0])) << "the killed process's folder was kept";
  EXPECT_THAT(folder->stale_removed(),
              ::testing::ElementsAre(paths[0].substr(paths[0].rfind('/') + 1)));
  EXPECT_TRUE(Exists(paths[1] + "/x19")) << "a live process's folder was removed";
  EXPECT_TRUE(Exists(parent + "/users-folder-AAAAAA/keep"));
  ::kill(children[1], SIGKILL);
  ::waitpid(children[1], nullptr, 0);
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
