#include "base/status_macros.h"

#include <memory>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::IsOk;
using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::Eq;
using ::testing::HasSubstr;

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError("odd " + std::to_string(x));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h), "second halving");
  return q;
}

absl::Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x));
  RETURN_IF_ERROR_CTX(Half(x).status(), "again");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MakeBox(int v) { return std::make_unique<int>(v); }

absl::StatusOr<int> Unbox() {
  ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(7));  // move-only value
  return *box;
}

TEST(StatusMacrosTest, AssignOrReturnPassesValuesAndErrors) {
  EXPECT_THAT(Quarter(8), IsOkAndHolds(Eq(2)));
  EXPECT_THAT(Quarter(3), StatusIs(absl::StatusCode::kInvalidArgument, Eq("odd 3")));
  // The context is prefixed, the code kept.
  EXPECT_THAT(Quarter(6),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("second halving: odd 3")));
  EXPECT_THAT(Unbox(), IsOkAndHolds(7));
}

TEST(StatusMacrosTest, ReturnIfError) {
  EXPECT_THAT(CheckEven(4), IsOk());
  EXPECT_THAT(CheckEven(5), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd 5")));
}

TEST(StatusMacrosTest, AnnotateKeepsOk) {
  EXPECT_TRUE(Annotate(absl::OkStatus(), "ctx").ok());
  EXPECT_EQ(Annotate(absl::NotFoundError("x"), "ctx").message(), "ctx: x");
}

TEST(StatusMatchersTest, MatchersCanFail) {
  EXPECT_THAT(absl::InternalError("boom"), ::testing::Not(IsOk()));
  EXPECT_THAT(Half(3), ::testing::Not(IsOkAndHolds(1)));
  EXPECT_THAT(Half(2), ::testing::Not(IsOkAndHolds(2)));
  EXPECT_THAT(absl::NotFoundError("a"),
              ::testing::Not(StatusIs(absl::StatusCode::kInternal, HasSubstr("a"))));
}

}  // namespace
}  // namespace loom::base
