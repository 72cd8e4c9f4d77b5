// Closed forms of ClipGradNorm (parity with Python is in //tests/optim:clip_grad_golden_test),
// and its CUDA path (torch._foreach_norm / _foreach_mul_ per device and dtype) run on CPU
// tensors: the same bits as the per-tensor path for one dtype, grouped for two.
#include "optim/clip_grad.h"

#include <torch/torch.h>

#include <vector>

#include "base/torch_compat.h"
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

class ForeachClipGradNormTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LOOM_TORCH_AT_LEAST(2, 1)) {
      GTEST_SKIP() << "LibTorch " << base::kLibTorchVersion
                   << " has no at::_foreach_mul_ by a tensor (torch >= 2.1); ClipGradNorm takes "
                      "the per-tensor path on every device there";
    }
  }
};

TEST_F(ForeachClipGradNormTest, SameBitsAsThePerTensorPathForOneDtype) {
  torch::manual_seed(3);
  std::vector<at::Tensor> a, b;
  for (int64_t n : {1, 7, 33, 1031, 70001}) {
    a.push_back(torch::zeros({n}).set_requires_grad(true));
    a.back().mutable_grad() = torch::randn({n}) * 3;
    b.push_back(torch::zeros({n}).set_requires_grad(true));
    b.back().mutable_grad() = a.back().grad().clone();
  }
  b.push_back(torch::zeros({2}).set_requires_grad(true));  // no gradient: skipped
  const double want = ClipGradNorm(a, 1.0);
  EXPECT_EQ(internal::ForeachClipGradNorm(b, 1.0), want);
  EXPECT_GT(want, 1.0);  // it clipped
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].grad(), b[i].grad())) << i;
  EXPECT_FALSE(b.back().grad().defined());
}

TEST_F(ForeachClipGradNormTest, GroupsByDtype) {
  // Norms 5 (float64), 12 (float32) and 0 (float64): a total of 13.
  at::Tensor a = ParamWithGrad({3, 4});
  at::Tensor b = torch::zeros({1}).set_requires_grad(true);
  b.mutable_grad() = torch::tensor({12.0f});
  at::Tensor c = ParamWithGrad({0});
  EXPECT_DOUBLE_EQ(internal::ForeachClipGradNorm({a, b, c}, 1.0), 13.0);
  const double coef = 1.0 / (13.0 + 1e-6);
  EXPECT_DOUBLE_EQ(a.grad()[1].item<double>(), 4 * coef);
  EXPECT_FLOAT_EQ(b.grad()[0].item<float>(), static_cast<float>(12 * coef));
  EXPECT_EQ(b.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(internal::ForeachClipGradNorm({}, 1.0), 0.0);
}

// On a GPU, the CUDA path itself against the CPU's (skipped without one).
TEST(ClipGradNormCudaTest, MatchesTheCpu) {
  if (!LOOM_TORCH_AT_LEAST(2, 1) || !torch::cuda::is_available()) {
    GTEST_SKIP() << "needs a CUDA device and LibTorch >= 2.1 (this is " << base::kLibTorchVersion
                 << ")";
  }
  torch::manual_seed(4);
  std::vector<at::Tensor> cpu, cuda;
  for (int64_t n : {1, 33, 70001, 1 << 20}) {
    cpu.push_back(torch::zeros({n}).set_requires_grad(true));
    cpu.back().mutable_grad() = torch::randn({n});
    cuda.push_back(torch::zeros({n}, torch::kCUDA).set_requires_grad(true));
    cuda.back().mutable_grad() = cpu.back().grad().to(torch::kCUDA);
  }
  const double want = ClipGradNorm(cpu, 1.0);
  EXPECT_NEAR(ClipGradNorm(cuda, 1.0), want, 1e-6 * want);
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_TRUE(torch::allclose(cuda[i].grad().cpu(), cpu[i].grad(), 1e-5, 1e-8)) << i;
  }
}

}  // namespace
}  // namespace loom::optim
