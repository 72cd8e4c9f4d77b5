// Closed forms and option rules of Adafactor (parity with Python over several steps is in
// //tests/optim:optimizer_golden_test).
#include "optim/adafactor.h"

#include <torch/types.h>

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "optim/param_state.h"

namespace loom::optim {
namespace {

// Step 1: beta2_1 = 1 - 1^-0.8 = 0, so v = g^2 + 1e-30 and the update is g / |g| = ±1 per
// entry (RMS 1, no clipping); the Trainer's configuration then gives
// p <- p - lr*wd*p - lr * sign(g).
TEST(AdafactorTest, FirstStepIsSignDescentWithDecay) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4}, {2, 2}}) {
    at::Tensor p = torch::tensor({1.0, -1.0, 2.0, 0.5}, torch::kDouble).reshape(shape);
    p.set_requires_grad(true);
    // A constant |g| keeps the factored (2-D) second moment exact as well.
    p.mutable_grad() = torch::tensor({0.3, -0.3, -0.3, 0.3}, torch::kDouble).reshape(shape);
    const double lr = 0.01, wd = 0.1;
    Adafactor opt(
        {p}, AdafactorOptions(lr).scale_parameter(false).relative_step(false).weight_decay(wd));
    opt.step();
    const std::vector<double> before = {1.0, -1.0, 2.0, 0.5}, sign = {1, -1, -1, 1};
    at::Tensor flat = p.detach().reshape({-1});
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(flat[i].item<double>(), before[i] * (1 - lr * wd) - lr * sign[i], 1e-12)
          << "dim " << shape.size() << " entry " << i;
    }
    const auto& state = static_cast<const AdafactorParamState&>(*opt.state().at(ParamStateKey(p)));
    EXPECT_EQ(state.step(), 1);
    EXPECT_EQ(state.exp_avg_sq().defined(), shape.size() == 1);
    EXPECT_EQ(state.exp_avg_sq_row().defined(), shape.size() == 2);
    EXPECT_FALSE(state.exp_avg().defined());  // no beta1
  }
}

TEST(AdafactorTest, RelativeStepLr) {
  AdafactorOptions o;  // relative_step, scale_parameter, no lr
  AdafactorParamState s;
  s.step(1);
  s.rms(torch::tensor(0.5, torch::kDouble));
  EXPECT_DOUBLE_EQ(Adafactor::StepLr(o, s), 0.5 * 1e-2);  // min(1e-2, 1/sqrt(1)) * RMS
  s.step(1000000);
  s.rms(torch::tensor(1e-4, torch::kDouble));
  EXPECT_DOUBLE_EQ(Adafactor::StepLr(o, s), 1e-3 * 1e-3);  // 1/sqrt(t) * eps2 floor
  o.warmup_init(true);
  s.step(10);
  EXPECT_DOUBLE_EQ(Adafactor::StepLr(o, s), 1e-3 * 1e-5);  // 1e-6 * t
}

TEST(AdafactorTest, HalfPrecisionIsComputedInFloatAndCopiedBack) {
  at::Tensor p = torch::tensor({1.0, -1.0}, torch::kBFloat16).set_requires_grad(true);
  p.mutable_grad() = torch::tensor({0.5, 0.5}, torch::kBFloat16);
  Adafactor opt({p}, AdafactorOptions(0.25).scale_parameter(false).relative_step(false));
  opt.step();
  EXPECT_EQ(p.scalar_type(), at::kBFloat16);
  EXPECT_EQ(p[0].item<float>(), 0.75f);
  EXPECT_EQ(p[1].item<float>(), -1.25f);
}

TEST(AdafactorTest, OptionRulesOfTheConstructor) {
  at::Tensor p = torch::zeros({2}).set_requires_grad(true);
  EXPECT_THROW(Adafactor({p}, AdafactorOptions(0.1)), c10::Error);  // lr + relative_step
  EXPECT_THROW(Adafactor({p}, AdafactorOptions(0.1).relative_step(false).warmup_init(true)),
               c10::Error);
  Adafactor relative({p}, AdafactorOptions());
  EXPECT_THROW(relative.defaults().get_lr(), c10::Error);
  Adafactor manual({p}, AdafactorOptions(0.1).relative_step(false));
  EXPECT_EQ(manual.defaults().get_lr(), 0.1);
  manual.param_groups()[0].options().set_lr(0.05);
  EXPECT_EQ(manual.param_groups()[0].options().get_lr(), 0.05);
}

}  // namespace
}  // namespace loom::optim
