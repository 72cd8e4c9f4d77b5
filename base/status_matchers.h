// gMock matchers for absl::Status and absl::StatusOr<T> (testonly).
//
//   EXPECT_THAT(Parse("x"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                    HasSubstr("--learning_rate")));
//   EXPECT_THAT(Parse("1"), IsOkAndHolds(1));
//   EXPECT_THAT(DoIt(), IsOk());
//   ASSERT_OK(DoIt());  ASSERT_OK_AND_ASSIGN(auto v, Parse("1"));
#ifndef LOOM_BASE_STATUS_MATCHERS_H_
#define LOOM_BASE_STATUS_MATCHERS_H_

#include <ostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base::testing {

namespace internal {
inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

MATCHER_P2(StatusIs, code, message_matcher,
           "status code is " + ::testing::PrintToString(code) + " and message " +
               ::testing::DescribeMatcher<std::string>(message_matcher, negation)) {
  const absl::Status& s = internal::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                       result_listener);
}

MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& s = internal::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.ok();
}

MATCHER_P(IsOkAndHolds, value_matcher,
          std::string(negation ? "is not OK or holds a value that does not match "
                               : "is OK and holds a value that matches ") +
              ::testing::PrintToString(value_matcher)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace loom::base::testing

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::loom::base::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::loom::base::testing::IsOk())
#define LOOM_ASSERT_OK_AND_ASSIGN_IMPL_(var, lhs, expr) \
  auto var = (expr);                                    \
  ASSERT_TRUE(var.ok()) << var.status();                \
  lhs = std::move(var).value()
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  LOOM_ASSERT_OK_AND_ASSIGN_IMPL_(LOOM_STATUS_CONCAT_(loom_assert_so_, __LINE__), lhs, expr)

#ifndef LOOM_STATUS_CONCAT_
#define LOOM_STATUS_CONCAT_INNER_(a, b) a##b
#define LOOM_STATUS_CONCAT_(a, b) LOOM_STATUS_CONCAT_INNER_(a, b)
#endif

#endif  // LOOM_BASE_STATUS_MATCHERS_H_
