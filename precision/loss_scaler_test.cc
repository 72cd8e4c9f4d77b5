#include "precision/loss_scaler.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using json = nlohmann::ordered_json;

args::Fp16Config Section(const json& raw) {
  std::vector<std::string> warnings;
  absl::StatusOr<args::DeepSpeedConfig> c =
      args::ParseDeepSpeedConfig(json{{"fp16", raw}}, "test", &warnings);
  EXPECT_TRUE(c.ok()) << c.status();
  return c->fp16;
}

TEST(LossScalerTest, OptionsFromTheConfigFollowDeepSpeed) {
  // The HF doc's section: every dynamic key given.
  json doc = {{"enabled", true}, {"loss_scale", 0}, {"loss_scale_window", 1000},
              {"initial_scale_power", 16}, {"hysteresis", 2}, {"min_loss_scale", 1}};
  LossScalerOptions o = FromDeepSpeedFp16(Section(doc), doc, true);
  EXPECT_TRUE(o.dynamic);
  EXPECT_EQ(o.init_scale, 65536.0);
  EXPECT_EQ(o.scale_window, 1000);
  EXPECT_EQ(o.delayed_shift, 2);
  EXPECT_EQ(o.min_scale, 1.0);
  // Only one key: the others take the config defaults.
  json one = {{"enabled", true}, {"hysteresis", 4}};
  o = FromDeepSpeedFp16(Section(one), one, true);
  EXPECT_EQ(o.init_scale, 65536.0);
  EXPECT_EQ(o.delayed_shift, 4);
  // None: DeepSpeed passes no dynamic_loss_args, so DynamicLossScaler's own defaults.
  json none = {{"enabled", true}};
  o = FromDeepSpeedFp16(Section(none), none, true);
  EXPECT_EQ(o.init_scale, 4294967296.0);
  EXPECT_EQ(o.delayed_shift, 1);
  // Static.
  json fixed = {{"enabled", true}, {"loss_scale", 128}};
  o = FromDeepSpeedFp16(Section(fixed), fixed, true);
  EXPECT_FALSE(o.dynamic);
  EXPECT_EQ(o.init_scale, 128.0);
  // bf16 / fp32: static 1.
  o = FromDeepSpeedFp16(Section(doc), doc, false);
  EXPECT_FALSE(o.dynamic);
  EXPECT_EQ(o.init_scale, 1.0);
}

TEST(LossScalerTest, HysteresisSequenceAndLogLines) {
  LossScalerOptions o;
  o.init_scale = 65536;
  o.scale_window = 2;
  o.delayed_shift = 2;
  DeepSpeedLossScaler s(o);
  struct Expect {
    bool overflow;
    double scale;
    std::string line;
  };
  const std::string p = "[deepspeed] OVERFLOW! Rank 0 Skipping step.";
  std::vector<Expect> steps = {
      {true, 65536, p + " Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1"},
      {true, 32768, p + " Attempted loss scale: 65536, reducing to 32768"},
      {false, 32768, ""},
      {false, 65536, ""},  // (3 - 1) % 2 == 0: grows, hysteresis refilled
      {true, 65536, p + " Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1"},
      {false, 65536, ""},
      {false, 131072, ""},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_OK_AND_ASSIGN(std::string line, s.Update(steps[i].overflow));
    EXPECT_EQ(line, steps[i].line);
    EXPECT_EQ(s.loss_scale(), steps[i].scale);
  }
  EXPECT_EQ(s.State().cur_iter, 7);
  EXPECT_EQ(s.State().last_overflow_iter, 4);
}

TEST(LossScalerTest, ConsecutiveHysteresisRefillsOnEveryCleanStep) {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.scale_window = 100;
  o.delayed_shift = 2;
  o.consecutive_hysteresis = true;
  DeepSpeedLossScaler s(o);
  ASSERT_OK(s.Update(true).status());   // hysteresis 2 -> 1
  ASSERT_OK(s.Update(false).status());  // refilled to 2
  ASSERT_OK(s.Update(true).status());   // 2 -> 1 again, scale kept
  EXPECT_EQ(s.loss_scale(), 1024);
  ASSERT_OK(s.Update(true).status());   // now halves
  EXPECT_EQ(s.loss_scale(), 512);
}

TEST(LossScalerTest, MinimumScaleAndStaticScale) {
  LossScalerOptions o;
  o.init_scale = 2;
  o.min_scale = 1;
  DeepSpeedLossScaler s(o);
  ASSERT_OK_AND_ASSIGN(std::string line, s.Update(true, /*rank=*/3));
  EXPECT_EQ(line, "[deepspeed] OVERFLOW! Rank 3 Skipping step. Attempted loss scale: 2, reducing to 1");
  EXPECT_THAT(s.Update(true), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("Current loss scale already at minimum")));
  o.raise_error_at_min_scale = false;
  DeepSpeedLossScaler keep(o);
  ASSERT_OK(keep.Update(true).status());
  ASSERT_OK(keep.Update(true).status());
  EXPECT_EQ(keep.loss_scale(), 1);
  LossScalerOptions fixed;
  fixed.dynamic = false;
  fixed.init_scale = 128;
  DeepSpeedLossScaler st(fixed);
  ASSERT_OK_AND_ASSIGN(std::string none, st.Update(true));
  EXPECT_EQ(none, "");
  EXPECT_EQ(st.loss_scale(), 128);
}

TEST(LossScalerTest, BfloatLinesNameNoScale) {
  LossScalerOptions o;
  o.half = false;
  o.init_scale = 4;
  DeepSpeedLossScaler s(o);
  ASSERT_OK_AND_ASSIGN(std::string line, s.Update(true));
  EXPECT_EQ(line, "[deepspeed] OVERFLOW! Rank 0 Skipping step.");
}

}  // namespace
}  // namespace loom::precision
