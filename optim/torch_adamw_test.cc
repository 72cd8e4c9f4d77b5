#include "optim/torch_adamw.h"

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "base/torch_compat.h"
#include "gtest/gtest.h"

namespace loom::optim {
namespace {

// Two steps of TorchAdamW on fixed gradients against the update written out by hand in
// torch 2.x `_single_tensor_adam`'s op order (decoupled decay, lerp), or, on LibTorch < 2.0,
// against LibTorch's own AdamW (whose arithmetic torch 1.13's Python shares).
TEST(TorchAdamWTest, MatchesPythonsSingleTensorAdamW) {
  const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.1).betas({0.8, 0.9});
  at::Tensor p = torch::linspace(-1.0, 1.0, 7);
  at::Tensor ref = p.clone();
  at::Tensor q = p.clone().requires_grad_(true);
  p.requires_grad_(true);
  TorchAdamW opt({p}, options);
  torch::optim::AdamW libtorch({q}, options);
  at::Tensor m = torch::zeros_like(ref), v = torch::zeros_like(ref);
  for (int t = 1; t <= 2; ++t) {
    const at::Tensor g = torch::sin(torch::arange(7.0) * t);
    p.mutable_grad() = g.clone();
    q.mutable_grad() = g.clone();
    opt.step();
    libtorch.step();
    ref.mul_(1 - 0.01 * 0.1);
    m.lerp_(g, 1 - 0.8);
    v.mul_(0.9).addcmul_(g, g, 1 - 0.9);
    const at::Tensor denom = (v.sqrt() / std::sqrt(1 - std::pow(0.9, t))).add_(1e-8);
    ref.addcdiv_(m, denom, -0.01 / (1 - std::pow(0.8, t)));
  }
  if (LOOM_TORCH_AT_LEAST(2, 0)) {
    EXPECT_TRUE(torch::equal(p.detach(), ref));
  } else {
    EXPECT_TRUE(torch::equal(p.detach(), q.detach()));
  }
}

// TorchAdam: the same with L2 decay folded into the gradient (torch 2.x's Adam,
// decoupled_weight_decay False), amsgrad on, against the update written out by hand, or
// LibTorch's own Adam on LibTorch < 2.0.
TEST(TorchAdamWTest, AdamMatchesPythonsSingleTensorAdam) {
  const auto options =
      torch::optim::AdamOptions(0.01).weight_decay(0.1).betas({0.8, 0.9}).amsgrad(true);
  at::Tensor p = torch::linspace(-1.0, 1.0, 7);
  at::Tensor ref = p.clone();
  at::Tensor q = p.clone().requires_grad_(true);
  p.requires_grad_(true);
  TorchAdam opt({p}, options);
  torch::optim::Adam libtorch({q}, options);
  at::Tensor m = torch::zeros_like(ref), v = torch::zeros_like(ref), vmax = torch::zeros_like(ref);
  for (int t = 1; t <= 3; ++t) {
    const at::Tensor g = torch::cos(torch::arange(7.0) * t);
    p.mutable_grad() = g.clone();
    q.mutable_grad() = g.clone();
    opt.step();
    libtorch.step();
    const at::Tensor decayed = g.add(ref, 0.1);
    m.lerp_(decayed, 1 - 0.8);
    v.mul_(0.9).addcmul_(decayed, decayed, 1 - 0.9);
    vmax = torch::maximum(vmax, v);
    const at::Tensor denom = (vmax.sqrt() / std::sqrt(1 - std::pow(0.9, t))).add_(1e-8);
    ref.addcdiv_(m, denom, -0.01 / (1 - std::pow(0.8, t)));
  }
  if (LOOM_TORCH_AT_LEAST(2, 0)) {
    EXPECT_TRUE(torch::equal(p.detach(), ref));
    // LibTorch's C++ Adam keeps 1.13's first-moment arithmetic: not the same bits here.
  } else {
    EXPECT_TRUE(torch::equal(p.detach(), q.detach()));
  }
}

}  // namespace
}  // namespace loom::optim
