#include "logging/process_logging.h"

#include <string>

#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging {
namespace {

TEST(ProcessLoggingTest, InitialisesOnceAndLogsToStderrWithoutTheEarlyWarning) {
  ASSERT_FALSE(google::IsGoogleLoggingInitialized());
  InitProcessLogging("process_logging_test");
  EXPECT_TRUE(google::IsGoogleLoggingInitialized());
  EXPECT_TRUE(FLAGS_logtostderr);
  InitProcessLogging("again");  // a second call is harmless (glog itself would abort)
  ::testing::internal::CaptureStderr();
  LOG(WARNING) << "hello from the test";
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("hello from the test"));
  EXPECT_THAT(err, ::testing::Not(::testing::HasSubstr("Logging before InitGoogleLogging")));
}

}  // namespace
}  // namespace loom::logging
