#include "checkpoint/folder/names.h"

#include <unistd.h>

#include <regex>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Optional;

TEST(NamesTest, CheckpointFolderName) {
  EXPECT_EQ(CheckpointFolderName(40), "checkpoint-40");
  EXPECT_EQ(CheckpointFolderName(0), "checkpoint-0");
}

TEST(NamesTest, GetLastCheckpointRuleIsExact) {
  EXPECT_THAT(ParseCheckpointFolderName("checkpoint-40"), Optional(40));
  EXPECT_THAT(ParseCheckpointFolderName("checkpoint-010"), Optional(10));
  EXPECT_THAT(ParseCheckpointFolderName("checkpoint-0"), Optional(0));
  EXPECT_THAT(ParseCheckpointFolderName("checkpoint-9223372036854775807"),
              Optional(9223372036854775807));
  for (const char* bad :
       {"checkpoint-", "checkpoint-abc", "checkpoint-10.tmp", "checkpoint-+5", "checkpoint--5",
        "Checkpoint-5", " checkpoint-5", "checkpoint-5 ", "checkpoint_5", "xcheckpoint-5",
        "checkpoint-9223372036854775808", ".loom-staging-checkpoint-5.1.0123456789abcdef"}) {
    EXPECT_EQ(ParseCheckpointFolderName(bad), std::nullopt) << bad;
  }
}

// Expected values are what Python's re.match(".*checkpoint-([0-9]+)", name) gives.
TEST(NamesTest, SortedCheckpointsRuleMatchesHfRegex) {
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-40"), Optional(40));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-010"), Optional(10));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-10.tmp"), Optional(10));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-5-checkpoint-7"), Optional(7));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-7-checkpoint-x"), Optional(7));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-12abc34"), Optional(12));
  EXPECT_THAT(ParseSortedCheckpointStep("checkpoint-3\ncheckpoint-5"), Optional(3));
  EXPECT_EQ(ParseSortedCheckpointStep("checkpoint-\ncheckpoint-5"), std::nullopt);
  EXPECT_EQ(ParseSortedCheckpointStep("checkpoint-abc"), std::nullopt);
  EXPECT_EQ(ParseSortedCheckpointStep("checkpoint-"), std::nullopt);
  // The glob "checkpoint-*" comes first: the name must start with it.
  EXPECT_EQ(ParseSortedCheckpointStep("xcheckpoint-5"), std::nullopt);
  EXPECT_EQ(ParseSortedCheckpointStep(".loom-staging-checkpoint-5.1.0123456789abcdef"),
            std::nullopt);
}

TEST(NamesTest, HiddenNamesRoundTripAndMatchTheDocumentedPattern) {
  const std::regex pattern(R"(^\.loom-(staging|replaced|deleting)-(.+)\.(\d+)\.([0-9a-f]{16})$)");
  for (HiddenKind kind : {HiddenKind::kStaging, HiddenKind::kReplaced, HiddenKind::kDeleting}) {
    const std::string hidden = HiddenFolderName(kind, "checkpoint-40.v2");
    EXPECT_TRUE(std::regex_match(hidden, pattern)) << hidden;
    EXPECT_TRUE(hidden.rfind(".loom-" + std::string(HiddenKindName(kind)) + "-checkpoint-40.v2." +
                                 std::to_string(::getpid()) + ".",
                             0) == 0)
        << hidden;
    std::optional<HiddenFolder> parsed = ParseHiddenFolderName(hidden);
    ASSERT_TRUE(parsed.has_value()) << hidden;
    EXPECT_EQ(parsed->kind, kind);
    EXPECT_EQ(parsed->name, "checkpoint-40.v2");
    EXPECT_EQ(parsed->pid, ::getpid());
    EXPECT_EQ(ParseCheckpointFolderName(hidden), std::nullopt);
    EXPECT_EQ(ParseSortedCheckpointStep(hidden), std::nullopt);
  }
  EXPECT_NE(HiddenFolderName(HiddenKind::kStaging, "a"),
            HiddenFolderName(HiddenKind::kStaging, "a"));
}

TEST(NamesTest, ParseHiddenRejectsAnythingElse) {
  for (const char* other : {
           ".loom-staging-checkpoint-40.123.0123456789abcdeF",  // upper-case hex
           ".loom-staging-checkpoint-40.123.0123456789abcde",   // 15 hex digits
           ".loom-staging-checkpoint-40.0123456789abcdef",      // no pid
           ".loom-staging-checkpoint-40.12a.0123456789abcdef",  // pid not digits
           ".loom-staging-.123.0123456789abcdef",               // no name
           ".loom-other-checkpoint-40.123.0123456789abcdef",    // unknown kind
           ".tmp-checkpoint-40.123.0123456789abcdef",           // not ours
           "loom-staging-checkpoint-40.123.0123456789abcdef",   // not hidden
           ".loom-staging-checkpoint-40.123.0123456789abcdef.x",
       }) {
    EXPECT_EQ(ParseHiddenFolderName(other), std::nullopt) << other;
  }
  std::optional<HiddenFolder> ok =
      ParseHiddenFolderName(".loom-deleting-checkpoint-7.42.0123456789abcdef");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->kind, HiddenKind::kDeleting);
  EXPECT_EQ(ok->name, "checkpoint-7");
  EXPECT_EQ(ok->pid, 42);
}

TEST(NamesTest, ValidateFolderName) {
  EXPECT_OK(ValidateFolderName("checkpoint-40"));
  EXPECT_OK(ValidateFolderName(std::string(202, 'a')));
  EXPECT_THAT(ValidateFolderName(""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("invalid checkpoint folder name '': it is empty")));
  EXPECT_THAT(ValidateFolderName(".."),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("it is not a folder name")));
  EXPECT_THAT(ValidateFolderName("a/checkpoint-1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("it contains '/'")));
  EXPECT_THAT(ValidateFolderName(".checkpoint-1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden names")));
  EXPECT_THAT(ValidateFolderName(std::string(203, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("longer than 202 bytes")));
}

}  // namespace
}  // namespace loom::checkpoint
