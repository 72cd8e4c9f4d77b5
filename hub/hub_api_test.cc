#include "hub/hub_api.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hub/testing_remote.h"

namespace loom::hub {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(HubApiTest, CreatesPrivateAndPublicRepositoriesOnAHubLikeServer) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/server";
  testing::HttpRemote server(root, "hf_API_SECRET");
  ASSERT_TRUE(server.up());
  const std::string hub = server.Url("");
  const std::string base = hub.substr(0, hub.size() - 1);
  ASSERT_OK_AND_ASSIGN(CreatedRepo made, CreateRepo(base, "me/private-model", "hf_API_SECRET", true));
  EXPECT_EQ(made.outcome, CreateRepoOutcome::kCreated);
  EXPECT_EQ(made.url, base + "/me/private-model");  // the server's answer
  EXPECT_EQ(testing::Read(root + "/me/private-model.git/loom-visibility"), "private");
  ASSERT_OK_AND_ASSIGN(made, CreateRepo(base, "public-model", "hf_API_SECRET", false));
  EXPECT_EQ(made.outcome, CreateRepoOutcome::kCreated);
  EXPECT_EQ(testing::Read(root + "/public-model.git/loom-visibility"), "public");
  // exist_ok.
  ASSERT_OK_AND_ASSIGN(made, CreateRepo(base, "me/private-model", "hf_API_SECRET", true));
  EXPECT_EQ(made.outcome, CreateRepoOutcome::kExists);
  // A refused token: named by its flag, never by its value.
  absl::StatusOr<CreatedRepo> refused = CreateRepo(base, "me/x", "hf_WRONG", true);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--hub_token")));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("hf_WRONG")));
  EXPECT_THAT(CreateRepo(base, "me/x", std::nullopt, true),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("refused")));
}

TEST(HubApiTest, UnreachableServerIsUnavailable) {
  // A port nobody listens on: a bound then closed socket's port.
  EXPECT_THAT(CreateRepo("http://127.0.0.1:1", "me/x", "t", false, 5),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("127.0.0.1:1")));
}

}  // namespace
}  // namespace loom::hub
