#include "precision/training_precision.h"

#include <torch/torch.h>

#include <limits>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::loom::base::testing::StatusIs;

PrecisionPolicy Fp16ScalerOnCpuWeights() {
  // The GradScaler path with fp32 weights and no autocast: what --fp16 does to the step,
  // runnable on a CPU.
  PrecisionPolicy p;
  p.grad_scaler = GradScalerOptions();
  p.grad_scaler->init_scale = 1024;
  return p;
}

TEST(TrainingPrecisionTest, Fp32IsThePlainLoop) {
  ASSERT_OK_AND_ASSIGN(auto tp, TrainingPrecision::Create(PrecisionPolicy()));
  EXPECT_FALSE(tp->ForwardAutocast().has_value());
  at::Tensor half = torch::ones({2}, at::kBFloat16);
  EXPECT_EQ(tp->OutputToFp32(half).scalar_type(), at::kBFloat16);
  at::Tensor loss = torch::tensor(2.0f);
  EXPECT_TRUE(tp->ScaleLoss(loss).is_same(loss));
  EXPECT_EQ(tp->grad_scaler(), nullptr);
  at::Tensor w = torch::ones({1}).set_requires_grad(true);
  w.mutable_grad() = torch::ones({1});
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.5));
  ASSERT_OK_AND_ASSIGN(bool stepped, tp->OptimizerStep(sgd, {w}));
  EXPECT_TRUE(stepped);
  EXPECT_EQ(w.item<float>(), 0.5f);
}

TEST(TrainingPrecisionTest, AutocastOutputsBecomeFp32) {
  PrecisionPolicy p;
  p.mode = PrecisionMode::kAutocast;
  p.compute_dtype = at::kBFloat16;
  p.autocast = AutocastSpec();
  ASSERT_OK_AND_ASSIGN(auto tp, TrainingPrecision::Create(p));
  EXPECT_EQ(tp->OutputToFp32(torch::ones({2}, at::kBFloat16)).scalar_type(), at::kFloat);
  EXPECT_EQ(tp->OutputToFp32(torch::ones({2}, at::kLong)).scalar_type(), at::kLong);
}

TEST(TrainingPrecisionTest, ScalerSkipsTheStepOnInf) {
  ASSERT_OK_AND_ASSIGN(auto tp, TrainingPrecision::Create(Fp16ScalerOnCpuWeights()));
  at::Tensor w = torch::ones({1}).set_requires_grad(true);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1.0));
  tp->ScaleLoss((w * 2).sum()).backward();
  EXPECT_EQ(w.grad().item<float>(), 2048.0f);
  ASSERT_OK(tp->UnscaleGradients({w}));
  EXPECT_EQ(w.grad().item<float>(), 2.0f);
  ASSERT_OK_AND_ASSIGN(bool stepped, tp->OptimizerStep(sgd, {w}));
  EXPECT_TRUE(stepped);
  EXPECT_EQ(w.item<float>(), -1.0f);
  w.mutable_grad() = torch::full({1}, std::numeric_limits<float>::infinity());
  ASSERT_OK_AND_ASSIGN(stepped, tp->OptimizerStep(sgd, {w}));
  EXPECT_FALSE(stepped);
  EXPECT_EQ(w.item<float>(), -1.0f);
  EXPECT_EQ(tp->grad_scaler()->scale(), 512.0f);
}

TEST(TrainingPrecisionTest, ResetStepForgetsAStepAnErrorLeftHalfDone) {
  ASSERT_OK_AND_ASSIGN(auto tp, TrainingPrecision::Create(Fp16ScalerOnCpuWeights()));
  at::Tensor w = torch::ones({1}).set_requires_grad(true);
  w.mutable_grad() = torch::ones({1});
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1.0));
  ASSERT_OK(tp->UnscaleGradients({w}));
  // The optimizer step threw (e.g. out of memory): no Update() ran.
  EXPECT_THAT(tp->UnscaleGradients({w}),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("unscale_()")));
  tp->ResetStep();
  ASSERT_OK(tp->UnscaleGradients({w}));
  EXPECT_EQ(tp->grad_scaler()->scale(), 1024.0f);  // the scale itself is kept
  ASSERT_OK_AND_ASSIGN(bool stepped, tp->OptimizerStep(sgd, {w}));
  EXPECT_TRUE(stepped);
}

// DeepSpeed's bf16: no autocast, no loss scaling in the loop (the ZeRO strategy keeps the fp32
// masters); fp16 weights with DeepSpeed's loss scaler are not implemented.
TEST(TrainingPrecisionTest, HalfWeights) {
  PrecisionPolicy p;
  p.mode = PrecisionMode::kHalfWeights;
  p.compute_dtype = at::kBFloat16;
  p.deepspeed_scaler = LossScalerOptions{.dynamic = false, .init_scale = 1.0, .half = false};
  ASSERT_OK_AND_ASSIGN(auto tp, TrainingPrecision::Create(p));
  EXPECT_FALSE(tp->ForwardAutocast().has_value());
  const at::Tensor loss = at::tensor({2.5f}).to(at::kBFloat16);
  EXPECT_TRUE(tp->ScaleLoss(loss).is_same(loss));
  EXPECT_EQ(tp->OutputToFp32(loss).scalar_type(), at::kBFloat16);
  p.compute_dtype = at::kHalf;
  p.deepspeed_scaler = LossScalerOptions();
  EXPECT_THAT(TrainingPrecision::Create(p),
              StatusIs(absl::StatusCode::kUnimplemented, ::testing::HasSubstr("fp16")));
}

}  // namespace
}  // namespace loom::precision
