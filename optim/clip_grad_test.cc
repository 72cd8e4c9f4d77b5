// Closed forms of ClipGradNorm (parity with Python is in //tests/optim:clip_grad_golden_test).
#include "optim/clip_grad.h"

#include <torch/types.h>

#include <vector>

#include "gtest/gtest.h"

namespace loom::optim {
namespace {

at::Tensor ParamWithGrad(std::vector<double> grad) {
  at::Tensor p = torch::zeros({static_cast<int64_t>(grad.size())}, torch::kDouble);
  p.set_requires_grad(true);
  p.mutable_grad() = torch::tensor(grad, torch::kDouble);
  return p;
}

TEST(ClipGradNormTest, ScalesEveryGradientByMaxNormOverTotal) {
  // Norms 5 and 12 make a total of 13.
  at::Tensor a = ParamWithGrad({3, 4});
  at::Tensor b = ParamWithGrad({12});
  EXPECT_EQ(ClipGradNorm({a, b}, 1.0), 13.0);
  const double coef = 1.0 / (13.0 + 1e-6);
  EXPECT_DOUBLE_EQ(a.grad()[0].item<double>(), 3 * coef);
  EXPECT_DOUBLE_EQ(a.grad()[1].item<double>(), 4 * coef);
  EXPECT_DOUBLE_EQ(b.grad()[0].item<double>(), 12 * coef);
}

TEST(ClipGradNormTest, FactorOneLeavesGradientsAsTheyAre) {
  at::Tensor a = ParamWithGrad({3, 4});
  EXPECT_EQ(ClipGradNorm({a}, 100.0), 5.0);
  EXPECT_EQ(a.grad()[0].item<double>(), 3.0);
  EXPECT_EQ(a.grad()[1].item<double>(), 4.0);
}

TEST(ClipGradNormTest, ParametersWithoutGradientsAreSkipped) {
  at::Tensor a = ParamWithGrad({6, 8});
  at::Tensor no_grad = torch::ones({2}, torch::kDouble).set_requires_grad(true);
  EXPECT_EQ(ClipGradNorm({no_grad, a}, 5.0), 10.0);
  EXPECT_FALSE(no_grad.grad().defined());
  EXPECT_DOUBLE_EQ(a.grad()[0].item<double>(), 6 * 5.0 / (10.0 + 1e-6));
  EXPECT_EQ(ClipGradNorm({no_grad}, 5.0), 0.0);
  EXPECT_EQ(ClipGradNorm({}, 5.0), 0.0);
}

TEST(ClipGradNormTest, ZeroMaxNormZeroesTheGradients) {
  at::Tensor a = ParamWithGrad({1, -2});
  EXPECT_DOUBLE_EQ(ClipGradNorm({a}, 0.0), std::sqrt(5.0));
  EXPECT_EQ(a.grad()[0].item<double>(), 0.0);
  EXPECT_EQ(a.grad()[1].item<double>(), 0.0);
}

}  // namespace
}  // namespace loom::optim
