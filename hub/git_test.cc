// Git: runs git in a folder; output masked for the token; the token not in git's configuration
// as git sees it; timeouts; a missing git program is a clear error.
#include "hub/git.h"

#include <cstdlib>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hub {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "hf_SeCrEt1234567890";
std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

TEST(GitTest, RunsAndMasksTheToken) {
  Git git(Tmp(), std::string(kToken));
  ASSERT_OK_AND_ASSIGN(GitResult init, git.Run({"init", "-q", "-b", "main"}));
  EXPECT_EQ(init.exit_code, 0) << init.output;
  // The helper is configured for this call (command-line scope) but holds no token itself.
  ASSERT_OK_AND_ASSIGN(GitResult config, git.Run({"config", "--list", "--show-scope"}));
  EXPECT_THAT(config.output, HasSubstr("command\tcredential.helper=!f()"));
  EXPECT_THAT(config.output, HasSubstr("${LOOM_HUB_GIT_TOKEN}"));
  EXPECT_THAT(config.output, Not(HasSubstr(kToken)));
  // Whatever git prints back has the token replaced.
  ASSERT_OK_AND_ASSIGN(GitResult echoed, git.Run({"rev-parse", std::string(kToken)}));
  EXPECT_NE(echoed.exit_code, 0);
  EXPECT_THAT(echoed.output, HasSubstr("<HUB_TOKEN>"));
  EXPECT_THAT(echoed.output, Not(HasSubstr(kToken)));
  absl::StatusOr<std::string> failed = git.Check({"rev-parse", std::string(kToken)}, "parsing");
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("parsing (git rev-parse "
                                                                          "<HUB_TOKEN>")));
  EXPECT_THAT(std::string(failed.status().message()), Not(HasSubstr(kToken)));
}

TEST(GitTest, MissingGitProgram) {
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", "/nonexistent", 1);
  absl::StatusOr<GitResult> r = Git(Tmp(), std::nullopt).Run({"status"});
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("install git")));
}

}  // namespace
}  // namespace loom::hub
