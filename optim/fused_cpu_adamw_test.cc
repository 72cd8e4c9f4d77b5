// FusedCpuAdamW against torch::optim::AdamW over several steps with two parameter groups
// (weight decay on and off), odd sizes (vector tails) and a parameter without a gradient; its
// state is AdamW's; a non-fusable parameter (amsgrad) takes torch's path.
#include "optim/fused_cpu_adamw.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace loom::optim {
namespace {

template <typename Opt>
std::vector<torch::Tensor> Train(int steps, bool amsgrad) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params = {torch::randn({37, 129}), torch::randn({1000003}),
                                       torch::randn({5}), torch::randn({7})};
  for (auto& p : params) p.set_requires_grad(true);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[1], params[3]},
                      std::make_unique<torch::optim::AdamWOptions>(
                          torch::optim::AdamWOptions(1e-2).weight_decay(0.1).amsgrad(amsgrad)));
  groups.emplace_back(
      std::vector<torch::Tensor>{params[2]},
      std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(3e-3).betas({0.8, 0.95}).eps(1e-6).weight_decay(0)));
  Opt opt(std::move(groups), torch::optim::AdamWOptions(1e-3));
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    torch::Tensor loss = (params[0].sin() * 3).pow(2).sum() + params[1].pow(3).mean() +
                         (params[2] * s).exp().sum();  // params[3] gets no gradient
    loss.backward();
    opt.step();
  }
  std::vector<torch::Tensor> out;
  for (auto& p : params) out.push_back(p.detach().clone());
  for (auto& p : params) {
    auto it = opt.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == opt.state().end()) {
      out.push_back(torch::Tensor());
      continue;
    }
    auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
    out.push_back(st.exp_avg_sq().clone());
  }
  return out;
}

TEST(FusedCpuAdamWTest, MatchesTorchAdamW) {
  for (bool amsgrad : {false, true}) {
    const auto want = Train<torch::optim::AdamW>(6, amsgrad);
    const auto got = Train<FusedCpuAdamW>(6, amsgrad);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].defined(), want[i].defined()) << i;
      if (!want[i].defined()) continue;
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-6))
          << "tensor " << i << " amsgrad " << amsgrad << ": max difference "
          << (got[i] - want[i]).abs().max().item<float>() << " of "
          << want[i].abs().max().item<float>();
    }
  }
}

TEST(FusedCpuAdamWTest, KernelOnATail) {
  // One element, by hand: AdamW's first step moves a parameter by lr (sign of the gradient).
  float p = 1, g = 0.5, m = 0, v = 0;
  FusedAdamWUpdate(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1 - 0.9, 1 - 0.999);
  EXPECT_NEAR(p, 0.9f, 1e-6);
  EXPECT_NEAR(m, 0.05f, 1e-7);
  EXPECT_NEAR(v, 0.00025f, 1e-9);
}

}  // namespace
}  // namespace loom::optim
