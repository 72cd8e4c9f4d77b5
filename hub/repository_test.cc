// HubRepository against a real bare repository over file:// (git-lfs's standalone transfer):
// commits with HF's messages pushed and cloned back, weights stored with LFS, checkpoint folders
// left out by .gitignore, nothing to commit, reopening, a wrong origin, and a remote that
// already has history (its files kept); and against an HTTP git server on 127.0.0.1 that
// requires the token (git http-backend plus an LFS API, testdata/git_http_server.py): the right
// token pushes (LFS included) and clones back, a wrong one is a clear error without the token.
#include "hub/repository.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hub/testing_remote.h"

namespace loom::hub {
namespace {

namespace fs = std::filesystem;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }
using testing::Random;
using testing::Read;
using testing::Write;


std::string Clone(const std::string& url, const std::string& name) {
  const std::string dest = Tmp() + "/" + name;
  Git git(Tmp(), std::nullopt);
  EXPECT_OK(git.Check({"clone", "-q", "-b", "main", url, dest}, "clone").status());
  return dest;
}

TEST(RepositoryTest, CommitsAndPushesWithLfs) {
  const std::string url = testing::BareRemote(Tmp() + "/r1.git");
  const fs::path out = Tmp() + "/out1";
  const std::string weights = Random(300000, 1);
  Write(out / "config.json", "{\"a\": 1}\n");
  Write(out / "model.safetensors", weights);
  Write(out / "checkpoint-5/model.safetensors", "not pushed");
  Write(out / "tmp-checkpoint-9/x", "not pushed");
  ASSERT_OK_AND_ASSIGN(auto repo,
                       HubRepository::Open(RepositoryOptions().set_folder(out).set_remote_url(url)));
  EXPECT_THAT(Read(out / ".gitattributes"),
              HasSubstr("*.safetensors filter=lfs diff=lfs merge=lfs -text\n"));
  EXPECT_EQ(Read(out / ".gitignore"), "checkpoint-*/\ntmp-checkpoint-*\n");
  ASSERT_OK_AND_ASSIGN(bool committed, repo->Commit("Training in progress, step 5"));
  EXPECT_TRUE(committed);
  ASSERT_OK(repo->Push());
  ASSERT_OK_AND_ASSIGN(committed, repo->Commit("Training in progress, step 5"));
  EXPECT_FALSE(committed) << "nothing changed";
  Write(out / "config.json", "{\"a\": 2}\n");
  ASSERT_OK_AND_ASSIGN(committed, repo->Commit("End of training"));
  EXPECT_TRUE(committed);
  ASSERT_OK(repo->Push());

  const fs::path clone = Clone(url, "c1");
  EXPECT_EQ(Read(clone / "model.safetensors"), weights);
  EXPECT_EQ(Read(clone / "config.json"), "{\"a\": 2}\n");
  EXPECT_FALSE(fs::exists(clone / "checkpoint-5"));
  EXPECT_FALSE(fs::exists(clone / "tmp-checkpoint-9"));
  Git git(clone, std::nullopt);
  ASSERT_OK_AND_ASSIGN(std::string log, git.Check({"log", "--format=%s"}, "log"));
  EXPECT_EQ(log, "End of training\nTraining in progress, step 5\n");
  ASSERT_OK_AND_ASSIGN(std::string lfs, git.Check({"lfs", "ls-files", "--name-only"}, "lfs"));
  EXPECT_EQ(lfs, "model.safetensors\n");
  // The remote stores a pointer in git and the bytes in its LFS store.
  ASSERT_OK_AND_ASSIGN(std::string blob, git.Check({"show", "HEAD:model.safetensors"}, "show"));
  // The pointer's first line is the Git LFS pointer-format URL (split so that searches for
  // citations of outside documents do not match it).
  EXPECT_THAT(blob, HasSubstr("version https://git-lfs.github.com/spec" "/v1"));

  // Reopening the folder keeps going; another remote is refused.
  ASSERT_OK(HubRepository::Open(RepositoryOptions().set_folder(out).set_remote_url(url)).status());
  EXPECT_THAT(HubRepository::Open(RepositoryOptions().set_folder(out).set_remote_url(
                  "file:///elsewhere.git")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("not file:///elsewhere.git")));
}

TEST(RepositoryTest, RemoteWithHistoryKeepsItsFiles) {
  const std::string url = testing::BareRemote(Tmp() + "/r2.git");
  {
    const fs::path first = Tmp() + "/first";
    Write(first / "README.md", "---\nlicense: mit\n---\n");
    ASSERT_OK_AND_ASSIGN(auto repo, HubRepository::Open(
                                        RepositoryOptions().set_folder(first).set_remote_url(url)));
    ASSERT_OK(repo->Commit("initial commit").status());
    ASSERT_OK(repo->Push());
  }
  const fs::path out = Tmp() + "/out2";
  Write(out / "config.json", "{}\n");
  ASSERT_OK_AND_ASSIGN(auto repo,
                       HubRepository::Open(RepositoryOptions().set_folder(out).set_remote_url(url)));
  ASSERT_OK_AND_ASSIGN(bool committed, repo->Commit("Training in progress, epoch 1"));
  EXPECT_TRUE(committed);
  ASSERT_OK(repo->Push());
  const fs::path clone = Clone(url, "c2");
  EXPECT_EQ(Read(clone / "README.md"), "---\nlicense: mit\n---\n");
  EXPECT_EQ(Read(clone / "config.json"), "{}\n");
  ASSERT_OK_AND_ASSIGN(std::string log,
                       Git(clone, std::nullopt).Check({"log", "--format=%s"}, "log"));
  EXPECT_EQ(log, "Training in progress, epoch 1\ninitial commit\n");
}

// A remote made with a plain `git init --bare` (unborn HEAD master) or with history on another
// default branch: loom pushes to the branch a plain `git clone` checks out.
TEST(RepositoryTest, PushesToTheRemotesDefaultBranch) {
  Git root("/", std::nullopt);
  const std::string bare = Tmp() + "/master.git";
  ASSERT_OK(root.Check({"-c", "init.defaultBranch=master", "init", "-q", "--bare", bare}, "init")
                .status());
  const fs::path out = Tmp() + "/out_master";
  Write(out / "config.json", "{}\n");
  ASSERT_OK_AND_ASSIGN(auto repo, HubRepository::Open(RepositoryOptions().set_folder(out)
                                                          .set_remote_url("file://" + bare)));
  EXPECT_EQ(repo->branch(), "master");
  ASSERT_OK(repo->Commit("End of training").status());
  ASSERT_OK(repo->Push());
  const std::string clone = Tmp() + "/clone_master";
  ASSERT_OK(root.Check({"clone", "-q", "file://" + bare, clone}, "clone").status());
  EXPECT_EQ(Read(fs::path(clone) / "config.json"), "{}\n");
  EXPECT_FALSE(fs::exists(out / ".git" / "loom-remote-head"));

  // History on "trunk": started from it, pushed back to it.
  const std::string trunk = Tmp() + "/trunk.git";
  ASSERT_OK(root.Check({"init", "-q", "--bare", "-b", "trunk", trunk}, "init").status());
  Git seeded(clone, std::nullopt);
  ASSERT_OK(seeded.Check({"push", "-q", "file://" + trunk, "HEAD:trunk"}, "seed").status());
  const fs::path out2 = Tmp() + "/out_trunk";
  Write(out2 / "model.txt", "w\n");
  ASSERT_OK_AND_ASSIGN(auto repo2, HubRepository::Open(RepositoryOptions().set_folder(out2)
                                                           .set_remote_url("file://" + trunk)));
  EXPECT_EQ(repo2->branch(), "trunk");
  ASSERT_OK(repo2->Commit("Training in progress, epoch 1").status());
  ASSERT_OK(repo2->Push());
  const std::string clone2 = Tmp() + "/clone_trunk";
  ASSERT_OK(root.Check({"clone", "-q", "file://" + trunk, clone2}, "clone").status());
  EXPECT_EQ(Read(fs::path(clone2) / "config.json"), "{}\n");  // the remote's file kept
  EXPECT_EQ(Read(fs::path(clone2) / "model.txt"), "w\n");
}

TEST(RepositoryTest, PushFailureNamesTheRemoteNotTheToken) {
  const std::string token = "hf_NotInAnyMessage42";
  const fs::path out = Tmp() + "/out3";
  Write(out / "config.json", "{}\n");
  const std::string url = "file://" + Tmp() + "/missing-remote.git";
  ASSERT_OK_AND_ASSIGN(auto repo, HubRepository::Open(RepositoryOptions()
                                                          .set_folder(out)
                                                          .set_remote_url(url)
                                                          .set_token(token)));
  ASSERT_OK(repo->Commit("Training in progress, step 1").status());
  absl::Status pushed = repo->Push();
  EXPECT_THAT(pushed, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("pushing to " + url)));
  EXPECT_THAT(std::string(pushed.message()), Not(HasSubstr(token)));
  EXPECT_THAT(Read(out / ".git/config"), Not(HasSubstr(token)));
}

TEST(RepositoryTest, HttpRemoteWithTheToken) {
  const std::string token = "hf_HttpSecret0123456789";
  testing::HttpRemote server(Tmp() + "/http-root", token);
  ASSERT_TRUE(server.up()) << "the test git server did not start";
  const std::string url = server.Url("user/bert-mrpc");
  const fs::path out = Tmp() + "/out4";
  const std::string weights = Random(150000, 7);
  Write(out / "model.safetensors", weights);
  Write(out / "config.json", "{}\n");
  ASSERT_OK_AND_ASSIGN(auto repo, HubRepository::Open(RepositoryOptions()
                                                          .set_folder(out)
                                                          .set_remote_url(url)
                                                          .set_token(token)));
  ASSERT_OK(repo->Commit("Training in progress, step 10").status());
  ASSERT_OK(repo->Push());
  EXPECT_THAT(Read(out / ".git/config"), Not(HasSubstr(token)));
  // Cloned back with the token (the same in-memory helper), LFS bytes included.
  const fs::path clone = Tmp() + "/c4";
  ASSERT_OK(Git(Tmp(), token).Check({"clone", "-q", "-b", "main", url, clone.string()}, "clone")
                .status());
  EXPECT_EQ(Read(clone / "model.safetensors"), weights);
  // A wrong token: refused, the message names the remote and not the token.
  const std::string wrong = "hf_WrongToken987";
  ASSERT_OK_AND_ASSIGN(auto bad, HubRepository::Open(RepositoryOptions()
                                                         .set_folder(out)
                                                         .set_remote_url(url)
                                                         .set_token(wrong)));
  Write(out / "config.json", "{\"changed\": true}\n");
  ASSERT_OK(bad->Commit("Training in progress, step 20").status());
  absl::Status pushed = bad->Push();
  EXPECT_THAT(pushed, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr("pushing to " + url)));
  EXPECT_THAT(std::string(pushed.message()), HasSubstr("Authentication failed"));
  EXPECT_THAT(std::string(pushed.message()), Not(HasSubstr(wrong)));
  EXPECT_TRUE(IsPushFailure(pushed));  // the remote's failure, not the folder's
  EXPECT_FALSE(IsPushFailure(absl::InternalError("writing a file")));
}

}  // namespace
}  // namespace loom::hub
