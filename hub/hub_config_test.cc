// RemoteUrl's mapping (URLs and paths as they are, ids under the hub URL, credentials in a URL
// refused), the token's order of precedence (flag, HF_TOKEN, $HF_HOME/token, ~/.cache), and
// HF's default model id.
#include "hub/hub_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hub {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(HubConfigTest, RemoteUrl) {
  ASSERT_OK_AND_ASSIGN(std::string u, RemoteUrl("user/model", "https://huggingface.co"));
  EXPECT_EQ(u, "https://huggingface.co/user/model");
  ASSERT_OK_AND_ASSIGN(u, RemoteUrl("model", "http://127.0.0.1:8080"));
  EXPECT_EQ(u, "http://127.0.0.1:8080/model");
  ASSERT_OK_AND_ASSIGN(u, RemoteUrl("file:///srv/git/m.git", "https://x"));
  EXPECT_EQ(u, "file:///srv/git/m.git");
  ASSERT_OK_AND_ASSIGN(u, RemoteUrl("/srv/git/m.git", "https://x"));
  EXPECT_EQ(u, "/srv/git/m.git");
  ASSERT_OK_AND_ASSIGN(u, RemoteUrl("./m.git", "https://x"));
  EXPECT_EQ(u, "./m.git");
  EXPECT_THAT(RemoteUrl("https://user:hf_x@huggingface.co/u/m", "https://x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("credentials")));
  EXPECT_THAT(RemoteUrl("u/m", "https://tok@example.com"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("credentials")));
  EXPECT_THAT(RemoteUrl("", "https://x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("hub_model_id")));
  ::setenv("LOOM_HUB_URL", "http://127.0.0.1:1234/", 1);
  EXPECT_EQ(HubUrlFromEnvironment(), "http://127.0.0.1:1234");
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:99", 1);
  EXPECT_EQ(HubUrlFromEnvironment(), "http://127.0.0.1:1234");  // LOOM_HUB_URL first
  ::unsetenv("LOOM_HUB_URL");
  EXPECT_EQ(HubUrlFromEnvironment(), "http://127.0.0.1:99");
  ::unsetenv("HF_ENDPOINT");
  EXPECT_EQ(HubUrlFromEnvironment(), "https://huggingface.co");
}

TEST(HubConfigTest, TokenPrecedence) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  ::unsetenv("HF_TOKEN");
  ::setenv("HOME", (tmp + "/home").c_str(), 1);
  ::setenv("HF_HOME", (tmp + "/hf").c_str(), 1);
  EXPECT_FALSE(ResolveHubToken("").has_value());
  std::filesystem::create_directories(tmp + "/home/.cache/huggingface");
  std::ofstream(tmp + "/home/.cache/huggingface/token") << "from_home\n";
  EXPECT_FALSE(ResolveHubToken("").has_value()) << "HF_HOME is set: its token file counts";
  ::unsetenv("HF_HOME");
  ASSERT_TRUE(ResolveHubToken("").has_value());
  EXPECT_EQ(ResolveHubToken("")->token, "from_home");
  std::filesystem::create_directories(tmp + "/hf");
  std::ofstream(tmp + "/hf/token") << "  from_hf_home \n";
  ::setenv("HF_HOME", (tmp + "/hf").c_str(), 1);
  EXPECT_EQ(ResolveHubToken("")->token, "from_hf_home");
  EXPECT_EQ(ResolveHubToken("")->source, tmp + "/hf/token");
  ::setenv("HF_TOKEN", "from_env", 1);
  EXPECT_EQ(ResolveHubToken("")->token, "from_env");
  EXPECT_EQ(ResolveHubToken("")->source, "HF_TOKEN");
  EXPECT_EQ(ResolveHubToken("from_flag")->token, "from_flag");
  EXPECT_EQ(ResolveHubToken("from_flag")->source, "--hub_token");
  ::unsetenv("HF_TOKEN");
  ::unsetenv("HF_HOME");
}

TEST(HubConfigTest, DefaultModelId) {
  EXPECT_EQ(DefaultModelId("/runs/bert-mrpc"), "bert-mrpc");
  EXPECT_EQ(DefaultModelId("/runs/bert-mrpc/"), "bert-mrpc");
  EXPECT_EQ(DefaultModelId("out"), "out");
  EXPECT_EQ(DefaultModelId("./runs/out/"), "out");
  // HF's Path(output_dir).absolute().name: "." is the working directory's name.
  EXPECT_EQ(DefaultModelId("."), std::filesystem::current_path().filename().string());
}

TEST(HubConfigTest, RedactUrlCredentials) {
  EXPECT_EQ(RedactUrlCredentials("https://user:s3cret@host.example/org/repo.git"),
            "https://<credentials>@host.example/org/repo.git");
  EXPECT_EQ(RedactUrlCredentials("https://hf_TOKEN@huggingface.co/x"),
            "https://<credentials>@huggingface.co/x");
  EXPECT_EQ(RedactUrlCredentials("see https://a:b@h/x and git://c@d/y"),
            "see https://<credentials>@h/x and git://<credentials>@d/y");
  EXPECT_EQ(RedactUrlCredentials("https://u:p@host"), "https://<credentials>@host");
  EXPECT_EQ(RedactUrlCredentials("https://host/path@v1"), "https://host/path@v1");
  EXPECT_EQ(RedactUrlCredentials("user/name"), "user/name");
  EXPECT_EQ(RedactUrlCredentials("/local/repo@x"), "/local/repo@x");
}

}  // namespace
}  // namespace loom::hub
