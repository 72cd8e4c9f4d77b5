#include "base/torch_status.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(TorchStatusTest, C10ErrorLosesItsBacktraceAndGainsContext) {
  try {
    at::ones({2, 3}).view({7});  // throws c10::Error
    FAIL() << "expected c10::Error";
  } catch (const std::exception& e) {
    absl::Status s = TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "reshaping x");
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reshaping x: shape")));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("Exception raised from")));
  }
}

TEST(TorchStatusTest, PlainExceptions) {
  std::runtime_error e("boom");
  EXPECT_EQ(TorchErrorMessage(e), "boom");
  EXPECT_THAT(TorchErrorToStatus(e, absl::StatusCode::kDataLoss, "f.pt"),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::Eq("f.pt: boom")));
}

}  // namespace
}  // namespace loom::base
