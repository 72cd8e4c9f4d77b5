#include "trainer/resume_position.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ResumePositionTest, RoundTripsEveryBitOfEveryField) {
  ResumePosition p;
  p.epoch = 3;
  p.micro_batches_in_epoch = 17;
  p.epoch_finished = true;
  p.total_batched_samples = 123456789012;
  p.tr_loss = std::nextafter(0.1f, 1.0f);
  p.total_loss_scalar = 1.0 / 3.0;
  p.globalstep_last_logged = 40;
  p.current_flos = 6.02e23;
  ASSERT_OK_AND_ASSIGN(ResumePosition q, ResumePosition::FromJson(p.ToJson()));
  EXPECT_EQ(q.epoch, 3);
  EXPECT_EQ(q.micro_batches_in_epoch, 17);
  EXPECT_TRUE(q.epoch_finished);
  EXPECT_EQ(q.total_batched_samples, 123456789012);
  EXPECT_EQ(std::memcmp(&q.tr_loss, &p.tr_loss, sizeof(float)), 0);
  EXPECT_EQ(q.total_loss_scalar, 1.0 / 3.0);
  EXPECT_EQ(q.globalstep_last_logged, 40);
  EXPECT_EQ(q.current_flos, 6.02e23);
}

TEST(ResumePositionTest, RejectsOtherFilesAndVersions) {
  EXPECT_THAT(ResumePosition::FromJson("{}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("loom_resume.json")));
  EXPECT_THAT(ResumePosition::FromJson(R"({"format": "loom.resume_position", "version": 2})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version 2")));
  EXPECT_THAT(ResumePosition::FromJson(R"({"format": "loom.resume_position", "version": 1})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("loom_resume.json")));
}

}  // namespace
}  // namespace loom::trainer
