#include "precision/master_weights.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

at::Tensor HalfParam(at::ScalarType dtype, std::vector<float> values, std::vector<float> grad) {
  at::Tensor p = torch::tensor(values).to(dtype).set_requires_grad(true);
  p.mutable_grad() = torch::tensor(grad).to(dtype);
  return p;
}

LossScalerOptions Static1() {
  LossScalerOptions o;
  o.dynamic = false;
  o.init_scale = 1;
  o.half = false;
  return o;
}

TEST(MasterWeightsTest, Bf16WeightsStepInFp32AndRoundBack) {
  // 1 + 2^-10 is not a bf16 value: the master keeps it, the model weight rounds it.
  at::Tensor p = HalfParam(at::kBFloat16, {1.0f, 2.0f}, {-std::ldexp(1.0f, -10), 0.5f});
  ASSERT_OK_AND_ASSIGN(MasterWeights mw, MasterWeights::Create({p}));
  EXPECT_EQ(mw.master()[0].scalar_type(), at::kFloat);
  torch::optim::SGD sgd(mw.master(), torch::optim::SGDOptions(1.0));
  DeepSpeedLossScaler scaler(Static1());
  ASSERT_OK_AND_ASSIGN(HalfStepResult r, mw.Step(sgd, scaler, /*clip_grad=*/0));
  EXPECT_FALSE(r.skipped);
  EXPECT_TRUE(torch::equal(mw.master()[0], torch::tensor({1.0f + std::ldexp(1.0f, -10), 1.5f})));
  EXPECT_TRUE(torch::equal(p.detach(), torch::tensor({1.0f, 1.5f}).to(at::kBFloat16)));
  EXPECT_FALSE(p.grad().defined());
  EXPECT_FLOAT_EQ(r.grad_norm, std::sqrt(std::ldexp(1.0, -20) + 0.25));
}

TEST(MasterWeightsTest, Fp16OverflowSkipsAndHalvesTheScale) {
  at::Tensor p = HalfParam(at::kHalf, {1.0f}, {std::numeric_limits<float>::infinity()});
  ASSERT_OK_AND_ASSIGN(MasterWeights mw, MasterWeights::Create({p}));
  torch::optim::SGD sgd(mw.master(), torch::optim::SGDOptions(1.0));
  LossScalerOptions o;
  o.init_scale = 4;
  DeepSpeedLossScaler scaler(o);
  ASSERT_OK_AND_ASSIGN(HalfStepResult r, mw.Step(sgd, scaler, 1.0));
  EXPECT_TRUE(r.skipped);
  EXPECT_EQ(r.overflow_line,
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4, reducing to 2");
  EXPECT_EQ(scaler.loss_scale(), 2);
  EXPECT_FALSE(p.grad().defined());
  EXPECT_EQ(mw.master()[0].item<float>(), 1.0f);
}

TEST(MasterWeightsTest, UnscalesAndClipsLikeDeepSpeed) {
  // Grads as backward leaves them: 4 x (3, 4), norm 20 scaled, 5 unscaled; clip to 1.
  at::Tensor p = HalfParam(at::kHalf, {0.0f, 0.0f}, {12.0f, 16.0f});
  ASSERT_OK_AND_ASSIGN(MasterWeights mw, MasterWeights::Create({p}));
  torch::optim::SGD sgd(mw.master(), torch::optim::SGDOptions(1.0));
  LossScalerOptions o;
  o.init_scale = 4;
  o.scale_window = 1000;
  DeepSpeedLossScaler scaler(o);
  ASSERT_OK_AND_ASSIGN(HalfStepResult r, mw.Step(sgd, scaler, /*clip_grad=*/1.0));
  EXPECT_DOUBLE_EQ(r.grad_norm, 5.0);
  const double combined = ((20.0 / 4 + 1e-6) / 1.0) * 4;
  at::Tensor expected = torch::tensor({12.0f, 16.0f});
  expected.mul_(1.0 / combined);
  EXPECT_TRUE(torch::equal(mw.master()[0], -expected));
}

TEST(MasterWeightsTest, RejectsIntegerParameters) {
  EXPECT_FALSE(MasterWeights::Create({torch::zeros({2}, at::kLong)}).ok());
}

}  // namespace
}  // namespace loom::precision
