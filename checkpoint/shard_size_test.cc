#include "checkpoint/shard_size.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::Eq;

TEST(ParseShardSizeTest, HfUnits) {
  EXPECT_THAT(ParseShardSize("5GB"), IsOkAndHolds(5'000'000'000u));
  EXPECT_THAT(ParseShardSize("10GB"), IsOkAndHolds(10'000'000'000u));
  EXPECT_THAT(ParseShardSize("200MB"), IsOkAndHolds(200'000'000u));
  EXPECT_THAT(ParseShardSize("3KB"), IsOkAndHolds(3'000u));
  EXPECT_THAT(ParseShardSize("1MiB"), IsOkAndHolds(1'048'576u));  // HF's docstring example
  EXPECT_THAT(ParseShardSize("2GIB"), IsOkAndHolds(2'147'483'648u));
  EXPECT_THAT(ParseShardSize("7kib"), IsOkAndHolds(7'168u));
  EXPECT_THAT(ParseShardSize("12345"), IsOkAndHolds(12'345u));
}

TEST(ParseShardSizeTest, LowercaseBMeansBits) {
  EXPECT_THAT(ParseShardSize("5Gb"), IsOkAndHolds(625'000'000u));
  EXPECT_THAT(ParseShardSize("5gb"), IsOkAndHolds(625'000'000u));
  EXPECT_THAT(ParseShardSize("5gB"), IsOkAndHolds(5'000'000'000u));
  EXPECT_THAT(ParseShardSize("1Kb"), IsOkAndHolds(125u));
  EXPECT_THAT(ParseShardSize("3Kb"), IsOkAndHolds(375u));
  EXPECT_THAT(ParseShardSize("1Mib"), IsOkAndHolds(1'048'576u));  // binary units: no bits rule
}

TEST(ParseShardSizeTest, PythonIntSyntax) {
  EXPECT_THAT(ParseShardSize(" 5 GB"), IsOkAndHolds(5'000'000'000u));
  EXPECT_THAT(ParseShardSize("+2MB"), IsOkAndHolds(2'000'000u));
  EXPECT_THAT(ParseShardSize("1_000KB"), IsOkAndHolds(1'000'000u));
  EXPECT_THAT(ParseShardSize("007MB"), IsOkAndHolds(7'000'000u));
}

TEST(ParseShardSizeTest, Errors) {
  const std::string hf =
      "`size` is not in a valid format. Use an integer followed by the unit, "
      "e.g., '5GB'.";
  for (const char* bad : {"5.5GB", "GB", "5TB", "five", "", "1__0MB", "_1MB", "1_MB", "5 G B"}) {
    EXPECT_THAT(ParseShardSize(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq(std::string("max_shard_size \"") + bad + "\": " + hf)))
        << bad;
  }
  EXPECT_THAT(ParseShardSize("-5GB"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("max_shard_size \"-5GB\" is not a positive size; use e.g. '5GB' or "
                          "'500MB'")));
  EXPECT_THAT(ParseShardSize("0MB"), StatusIs(absl::StatusCode::kInvalidArgument,
                                              Eq("max_shard_size \"0MB\" is not a positive "
                                                 "size; use e.g. '5GB' or '500MB'")));
  EXPECT_THAT(ParseShardSize("7b"),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("max_shard_size \"7b\": " + hf)));
  EXPECT_THAT(ParseShardSize("20000000000GB"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("max_shard_size \"20000000000GB\" is more than 2^64 - 1 bytes")));
}

}  // namespace
}  // namespace loom::checkpoint
