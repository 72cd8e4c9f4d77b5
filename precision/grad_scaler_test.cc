#include "precision/grad_scaler.h"

#include <torch/torch.h>

#include <limits>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

at::Tensor Param(std::vector<float> grad) {
  at::Tensor p = torch::zeros({static_cast<int64_t>(grad.size())}).set_requires_grad(true);
  p.mutable_grad() = torch::tensor(grad);
  return p;
}

TEST(GradScalerTest, OptionsAreChecked) {
  GradScalerOptions o;
  o.growth_factor = 1.0;
  EXPECT_THAT(GradScaler::Create(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("growth_factor must be > 1.0")));
  o = GradScalerOptions();
  o.backoff_factor = 1.0;
  EXPECT_THAT(GradScaler::Create(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("backoff_factor must be < 1.0")));
  o = GradScalerOptions();
  o.growth_interval = 0;
  EXPECT_FALSE(GradScaler::Create(o).ok());
}

TEST(GradScalerTest, ScaleUnscaleAndFoundInf) {
  ASSERT_OK_AND_ASSIGN(GradScaler s, GradScaler::Create({}));
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.Scale(torch::tensor(0.5f)).item<float>(), 32768.0f);
  at::Tensor p = Param({65536.0f, -131072.0f});
  ASSERT_OK(s.Unscale({p}));
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({1.0f, -2.0f})));
  EXPECT_FALSE(s.found_inf());
  EXPECT_THAT(s.Unscale({p}), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("unscale_() has already been called")));
  s.Update();
  at::Tensor bad = Param({1.0f, std::numeric_limits<float>::quiet_NaN()});
  ASSERT_OK(s.Unscale({p, bad}));
  EXPECT_TRUE(s.found_inf());
}

TEST(GradScalerTest, SkipsBacksOffAndGrows) {
  GradScalerOptions o;
  o.init_scale = 8;
  o.growth_interval = 3;
  ASSERT_OK_AND_ASSIGN(GradScaler s, GradScaler::Create(o));
  int steps = 0;
  auto step = [&] { ++steps; };
  const float inf = std::numeric_limits<float>::infinity();
  // clean, clean, inf, clean x3 (grows), clean
  std::vector<std::vector<float>> grads = {{1}, {1}, {inf}, {1}, {1}, {1}, {1}};
  std::vector<bool> expect_ran = {true, true, false, true, true, true, true};
  std::vector<float> expect_scale = {8, 8, 4, 4, 4, 8, 8};
  std::vector<int64_t> expect_tracker = {1, 2, 0, 1, 2, 0, 1};
  for (size_t i = 0; i < grads.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_OK_AND_ASSIGN(bool ran, s.Step(step, {Param(grads[i])}));
    EXPECT_EQ(ran, expect_ran[i]);
    EXPECT_EQ(s.scale(), expect_scale[i]);
    EXPECT_EQ(s.growth_tracker(), expect_tracker[i]);
  }
  EXPECT_EQ(steps, 6);
}

TEST(GradScalerTest, NeverGrowsPastFloat32) {
  GradScalerOptions o;
  o.init_scale = 3e38;
  o.growth_interval = 1;
  ASSERT_OK_AND_ASSIGN(GradScaler s, GradScaler::Create(o));
  ASSERT_OK(s.Step([] {}, {Param({1})}).status());
  EXPECT_EQ(s.scale(), 3e38f);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScalerTest, HalfGradientsAreRefused) {
  ASSERT_OK_AND_ASSIGN(GradScaler s, GradScaler::Create({}));
  at::Tensor p = torch::zeros({2}, at::kHalf).set_requires_grad(true);
  p.mutable_grad() = torch::ones({2}, at::kHalf);
  EXPECT_THAT(s.Unscale({p}), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("Attempting to unscale FP16 gradients")));
}

TEST(GradScalerTest, StateRoundTrip) {
  GradScalerOptions o;
  o.growth_interval = 5;
  ASSERT_OK_AND_ASSIGN(GradScaler a, GradScaler::Create(o));
  for (int i = 0; i < 3; ++i) ASSERT_OK(a.Step([] {}, {Param({1})}).status());
  GradScalerState st = a.State();
  EXPECT_EQ(st.scale, 65536.0);
  EXPECT_EQ(st.growth_tracker, 3);
  EXPECT_EQ(st.growth_interval, 5);
  ASSERT_OK_AND_ASSIGN(GradScaler b, GradScaler::Create({}));
  ASSERT_OK(b.LoadState(st));
  EXPECT_EQ(b.State(), st);
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(a.Step([] {}, {Param({1})}).status());
    ASSERT_OK(b.Step([] {}, {Param({1})}).status());
    EXPECT_EQ(a.State(), b.State());
  }
  EXPECT_EQ(a.scale(), 131072.0f);
  // torch's state_dict layout, and back.
  const c10::IValue dict = a.StateDict();
  ASSERT_TRUE(dict.isGenericDict());
  std::vector<std::string> keys;
  for (const auto& e : dict.toGenericDict()) keys.push_back(e.key().toStringRef());
  EXPECT_EQ(keys, (std::vector<std::string>{"scale", "growth_factor", "backoff_factor",
                                            "growth_interval", "_growth_tracker"}));
  ASSERT_OK_AND_ASSIGN(GradScaler c, GradScaler::Create({}));
  ASSERT_OK(c.LoadStateDict(dict));
  EXPECT_EQ(c.State(), a.State());
  c10::impl::GenericDict bad(c10::StringType::get(), c10::AnyType::get());
  bad.insert("scale", std::string("x"));
  EXPECT_THAT(c.LoadStateDict(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("\"scale\" must be a number")));
  st.growth_tracker = 7;
  EXPECT_THAT(b.LoadState(st), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("_growth_tracker 7 is outside [0, 5)")));
}

}  // namespace
}  // namespace loom::precision
