// The fused CPU optimizers against torch's own and HF's AdamW over 100 steps on tensors of
// odd sizes (vector tails, a chunk split over threads), on each ISA path this CPU has: the
// parameters and states within 1e-6 relative (of the tensor's largest magnitude), the 16-bit
// copies equal to the fp32 parameters rounded by c10, bias_correction false against the
// formula, and the torch fallback (amsgrad) refusing the extras. AdamW's at::_fused_adamw_ path
// (the CUDA parameters' one) runs on CPU tensors through cpu_through_aten_fused: the same
// comparison with torch's AdamW, amsgrad included, and a state a torch AdamW loads and continues;
// on a machine with a GPU, the CUDA parameters themselves.
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/torch_compat.h"
#include "gtest/gtest.h"
#include "optim/fused_cpu_optim.h"
#include "optim/hf_adamw.h"
#include "optim/param_state.h"

namespace loom::optim {
namespace {

constexpr int kSteps = 100;
const std::vector<int64_t> kSizes = {1, 7, 17, 33, 129, 1031, 70001};

std::vector<torch::Tensor> Params() {
  torch::manual_seed(5);
  std::vector<torch::Tensor> out;
  for (int64_t n : kSizes) out.push_back(torch::randn({n}));
  return out;
}

// Gradient of step s for parameter i (the same for both optimizers).
torch::Tensor Grad(int step, size_t i) {
  torch::manual_seed(1000 * step + static_cast<int64_t>(i));
  return torch::randn({kSizes[i]}) * (1 + static_cast<double>(i % 3));
}

// Runs `opt` over `params` for kSteps; calls `after_step` after each.
void RunSteps(torch::optim::Optimizer& opt, std::vector<torch::Tensor>& params,
              const std::function<void(int)>& after_step = nullptr) {
  for (int s = 0; s < kSteps; ++s) {
    for (size_t i = 0; i < params.size(); ++i) {
      // Parameter 3 gets no gradient on even steps (a skipped parameter).
      params[i].mutable_grad() =
          (i == 3 && s % 2 == 0) ? torch::Tensor() : Grad(s, i).to(params[i].device());
    }
    opt.step();
    if (after_step) after_step(s);
  }
}

void ExpectClose(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  const double scale = want.abs().max().item<double>();
  const double diff = (got - want).abs().max().item<double>();
  EXPECT_LE(diff, 1e-6 * std::max(scale, 1e-30))
      << what << ": max difference " << diff << " of " << scale;
}

std::vector<torch::Tensor> Clones(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone());
  return out;
}

// Two groups (weight decay on and off), as the Trainer makes them.
template <typename Options>
std::vector<torch::optim::OptimizerParamGroup> Groups(const std::vector<torch::Tensor>& ps,
                                                      Options decayed, Options plain) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{ps[0], ps[2], ps[3], ps[6]},
                      std::make_unique<Options>(decayed));
  groups.emplace_back(std::vector<torch::Tensor>{ps[1], ps[4], ps[5]},
                      std::make_unique<Options>(plain));
  return groups;
}

template <typename State, typename Get>
torch::Tensor StateTensor(torch::optim::Optimizer& opt, const torch::Tensor& p, const Get& get) {
  auto it = opt.state().find(ParamStateKey(p));
  if (it == opt.state().end()) return {};
  return get(static_cast<State&>(*it->second));
}

int64_t StepOf(torch::optim::Optimizer& opt, const torch::Tensor& p) {
  return static_cast<torch::optim::AdamWParamState&>(*opt.state().at(ParamStateKey(p))).step();
}

const auto kExpAvgSq = [](auto& s) { return s.exp_avg_sq(); };
const auto kExpAvg = [](auto& s) { return s.exp_avg(); };
const auto kSum = [](auto& s) { return s.sum(); };

class FusedCpuOptimTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    const auto isas = SupportedCpuIsas();
    if (std::find(isas.begin(), isas.end(), GetParam()) == isas.end()) {
      GTEST_SKIP() << "this CPU lacks " << CpuIsaName(GetParam())
                   << " (the path runs on machines that have it)";
    }
  }
};

TEST_P(FusedCpuOptimTest, AdamWMatchesTorch) {
  const auto decayed = torch::optim::AdamWOptions(1e-2).weight_decay(0.1).eps(1e-8);
  const auto plain = torch::optim::AdamWOptions(3e-3).betas({0.8, 0.95}).eps(1e-6).weight_decay(0);
  auto want_p = Params();
  torch::optim::AdamW want(Groups(want_p, decayed, plain));
  RunSteps(want, want_p);
  auto got_p = Params();
  FusedCpuAdamW got(Groups(got_p, decayed, plain));
  got.set_isa(GetParam());
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
    ExpectClose(StateTensor<torch::optim::AdamWParamState>(got, got_p[i], kExpAvgSq),
                StateTensor<torch::optim::AdamWParamState>(want, want_p[i], kExpAvgSq),
                "exp_avg_sq " + std::to_string(i));
  }
}

TEST_P(FusedCpuOptimTest, HfAdamWMatchesHf) {
  const auto decayed = HfAdamWOptions(1e-2).weight_decay(0.1).eps(1e-8);
  const auto plain = HfAdamWOptions(3e-3).betas({0.8, 0.95}).eps(1e-6).correct_bias(false);
  auto want_p = Params();
  HfAdamW want(Groups(want_p, decayed, plain));
  RunSteps(want, want_p);
  auto got_p = Params();
  FusedCpuHfAdamW got(Groups(got_p, decayed, plain));
  got.set_isa(GetParam());
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
  }
}

TEST_P(FusedCpuOptimTest, AdamMatchesTorch) {
  const auto decayed = torch::optim::AdamOptions(1e-2).weight_decay(0.05);
  const auto plain = torch::optim::AdamOptions(1e-3).weight_decay(0);
  auto want_p = Params();
  torch::optim::Adam want(Groups(want_p, decayed, plain));
  RunSteps(want, want_p);
  auto got_p = Params();
  FusedCpuAdam got(Groups(got_p, decayed, plain));
  got.set_isa(GetParam());
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
    ExpectClose(StateTensor<torch::optim::AdamParamState>(got, got_p[i], kExpAvg),
                StateTensor<torch::optim::AdamParamState>(want, want_p[i], kExpAvg),
                "exp_avg " + std::to_string(i));
  }
}

TEST_P(FusedCpuOptimTest, AdagradMatchesTorch) {
  const auto decayed = torch::optim::AdagradOptions(1e-2)
                           .weight_decay(0.01)
                           .lr_decay(0.01)
                           .initial_accumulator_value(0.1);
  const auto plain = torch::optim::AdagradOptions(5e-2).eps(1e-10);
  auto want_p = Params();
  torch::optim::Adagrad want(Groups(want_p, decayed, plain));
  RunSteps(want, want_p);
  auto got_p = Params();
  FusedCpuAdagrad got(Groups(got_p, decayed, plain));
  got.set_isa(GetParam());
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
    ExpectClose(StateTensor<torch::optim::AdagradParamState>(got, got_p[i], kSum),
                StateTensor<torch::optim::AdagradParamState>(want, want_p[i], kSum),
                "sum " + std::to_string(i));
  }
}

TEST_P(FusedCpuOptimTest, HalfCopiesAreTheRoundedParameters) {
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    auto want_p = Params();
    torch::optim::AdamW want(want_p, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    RunSteps(want, want_p);
    auto got_p = Params();
    FusedCpuAdamW got(got_p, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    got.set_isa(GetParam());
    std::vector<torch::Tensor> copies;
    for (const auto& p : got_p) {
      copies.push_back(torch::zeros({p.numel()}, dtype));
      got.SetHalfCopy(p, copies.back());
    }
    RunSteps(got, got_p, [&](int step) {
      for (size_t i = 0; i < got_p.size(); ++i) {
        if (i == 3 && step % 2 == 0) continue;  // no gradient, no step, no copy
        ASSERT_TRUE(torch::equal(copies[i], got_p[i].to(dtype)))
            << c10::toString(dtype) << " copy of param " << i << " after step " << step;
      }
    });
    for (size_t i = 0; i < got_p.size(); ++i) {
      ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
    }
  }
  // Adagrad writes them too.
  auto p = Params();
  FusedCpuAdagrad adagrad(p, torch::optim::AdagradOptions(1e-2));
  adagrad.set_isa(GetParam());
  torch::Tensor copy = torch::zeros({p[6].numel()}, at::kBFloat16);
  adagrad.SetHalfCopy(p[6], copy);
  RunSteps(adagrad, p);
  EXPECT_TRUE(torch::equal(copy, p[6].to(at::kBFloat16)));
}

TEST_P(FusedCpuOptimTest, WithoutBiasCorrection) {
  // The formula with bc1 = bc2 = 1, in torch's float tensor operations.
  auto p = Params();
  std::vector<torch::Tensor> ref_p, m, v;
  for (const auto& t : p) {
    ref_p.push_back(t.detach().clone());
    m.push_back(torch::zeros_like(ref_p.back()));
    v.push_back(torch::zeros_like(ref_p.back()));
  }
  FusedCpuAdamW got(p, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  got.set_isa(GetParam());
  got.set_bias_correction(false);
  RunSteps(got, p, [&](int s) {
    for (size_t i = 0; i < p.size(); ++i) {
      if (i == 3 && s % 2 == 0) continue;
      const torch::Tensor g = Grad(s, i);
      ref_p[i].mul_(1 - 1e-3 * 0.01);
      m[i].mul_(0.9).add_(g, 0.1);
      v[i].mul_(0.999).addcmul_(g, g, 0.001);
      ref_p[i].addcdiv_(m[i], v[i].sqrt().add_(1e-8), -1e-3);
    }
  });
  for (size_t i = 0; i < p.size(); ++i) {
    ExpectClose(p[i], ref_p[i], "param " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(EachIsa, FusedCpuOptimTest,
                         ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512),
                         [](const auto& info) { return std::string(CpuIsaName(info.param)); });

TEST(FusedCpuOptimFallbackTest, AmsgradTakesTorchsPathAndRefusesExtras) {
  auto want_p = Params();
  torch::optim::AdamW want(want_p, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  RunSteps(want, want_p);
  auto got_p = Params();
  FusedCpuAdamW got(got_p, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    EXPECT_TRUE(torch::equal(got_p[i], want_p[i])) << i;  // the same code ran
  }
  got.set_bias_correction(false);
  EXPECT_THROW(got.step(), c10::Error);
}

TEST(FusedCpuOptimFallbackTest, BadHalfCopyIsRefused) {
  auto p = Params();
  FusedCpuAdamW opt(p, torch::optim::AdamWOptions(1e-2));
  EXPECT_THROW(opt.SetHalfCopy(p[0], torch::zeros({2}, at::kBFloat16)), c10::Error);
  EXPECT_THROW(opt.SetHalfCopy(p[0], torch::zeros({1}, at::kFloat)), c10::Error);
}

// AdamW's at::_fused_adamw_ path, on CPU tensors (torch's CPU kernel of the op the CUDA
// parameters take).
class AtenFusedAdamWTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kHasAtenFusedAdamW) {
      GTEST_SKIP() << "LibTorch " << base::kLibTorchVersion
                   << " has no at::_fused_adamw_ CPU kernel (torch >= 2.4); the path is "
                      "compiled out of this build";
    }
  }

  // Runs torch's AdamW and FusedCpuAdamW through at::_fused_adamw_ over the same steps and
  // expects the same parameters and the same AdamWParamState (type, step, moments).
  void ExpectMatchesTorch(const torch::optim::AdamWOptions& decayed,
                          const torch::optim::AdamWOptions& plain) {
    auto want_p = Params();
    torch::optim::AdamW want(Groups(want_p, decayed, plain));
    RunSteps(want, want_p);
    auto got_p = Params();
    FusedCpuAdamW got(Groups(got_p, decayed, plain));
    got.set_cpu_through_aten_fused(true);
    RunSteps(got, got_p);
    for (size_t i = 0; i < got_p.size(); ++i) {
      const std::string n = std::to_string(i);
      ExpectClose(got_p[i], want_p[i], "param " + n);
      auto* g = dynamic_cast<torch::optim::AdamWParamState*>(
          got.state().at(ParamStateKey(got_p[i])).get());
      auto& w =
          static_cast<torch::optim::AdamWParamState&>(*want.state().at(ParamStateKey(want_p[i])));
      ASSERT_NE(g, nullptr) << "state " << n << " is not an AdamWParamState";
      EXPECT_EQ(g->step(), w.step()) << n;
      EXPECT_EQ(g->exp_avg().scalar_type(), at::kFloat) << n;
      EXPECT_EQ(g->exp_avg().sizes(), w.exp_avg().sizes()) << n;
      ExpectClose(g->exp_avg(), w.exp_avg(), "exp_avg " + n);
      ExpectClose(g->exp_avg_sq(), w.exp_avg_sq(), "exp_avg_sq " + n);
      EXPECT_EQ(g->max_exp_avg_sq().defined(), w.max_exp_avg_sq().defined()) << n;
      if (w.max_exp_avg_sq().defined()) {
        ExpectClose(g->max_exp_avg_sq(), w.max_exp_avg_sq(), "max_exp_avg_sq " + n);
      }
    }
  }
};

TEST_F(AtenFusedAdamWTest, MatchesTorchAdamW) {
  ExpectMatchesTorch(torch::optim::AdamWOptions(1e-2).weight_decay(0.1).eps(1e-8),
                     torch::optim::AdamWOptions(3e-3).betas({0.8, 0.95}).eps(1e-6).weight_decay(0));
}

TEST_F(AtenFusedAdamWTest, AmsgradMatchesTorchAdamW) {
  ExpectMatchesTorch(torch::optim::AdamWOptions(1e-2).weight_decay(0.1).amsgrad(true),
                     torch::optim::AdamWOptions(3e-3).weight_decay(0).amsgrad(true));
}

TEST_F(AtenFusedAdamWTest, TorchAdamWLoadsItsStateAndContinues) {
  const auto decayed = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  const auto plain = torch::optim::AdamWOptions(3e-3).weight_decay(0);
  auto got_p = Params();
  FusedCpuAdamW got(Groups(got_p, decayed, plain));
  got.set_cpu_through_aten_fused(true);
  RunSteps(got, got_p);
  std::stringstream saved;
  torch::save(got, saved);
  auto want_p = Clones(got_p);
  torch::optim::AdamW want(Groups(want_p, decayed, plain));
  torch::load(want, saved);
  for (size_t i = 0; i < got_p.size(); ++i) {
    got_p[i].mutable_grad() = Grad(kSteps, i);
    want_p[i].mutable_grad() = Grad(kSteps, i);
  }
  got.step();
  want.step();
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i], want_p[i], "param " + std::to_string(i));
    // Parameter 3 had a gradient on every other step.
    const int64_t steps = (i == 3 ? kSteps / 2 : kSteps) + 1;
    EXPECT_EQ(StepOf(got, got_p[i]), steps) << i;
    EXPECT_EQ(StepOf(want, want_p[i]), steps) << i;
  }
}

TEST_F(AtenFusedAdamWTest, RefusesTheExtras) {
  auto p = Params();
  FusedCpuAdamW opt(p, torch::optim::AdamWOptions(1e-2));
  opt.set_cpu_through_aten_fused(true);
  RunSteps(opt, p);
  const torch::Tensor before = p[0].clone();
  opt.set_bias_correction(false);
  EXPECT_THROW(opt.step(), c10::Error);
  opt.set_bias_correction(true);
  opt.SetHalfCopy(p[0], torch::zeros({p[0].numel()}, at::kBFloat16));
  EXPECT_THROW(opt.step(), c10::Error);
  EXPECT_TRUE(torch::equal(p[0], before));  // refused before anything moved
}

// On a GPU, the CUDA parameters themselves (skipped without one).
TEST(AtenFusedAdamWCudaTest, MatchesTorchAdamWOnCuda) {
  if (!kHasAtenFusedAdamW || !torch::cuda::is_available()) {
    GTEST_SKIP() << "needs a CUDA device and LibTorch >= 2.4 (this is " << base::kLibTorchVersion
                 << ")";
  }
  const auto decayed = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  const auto plain = torch::optim::AdamWOptions(3e-3).betas({0.8, 0.95}).weight_decay(0);
  auto on_cuda = [](std::vector<torch::Tensor> ps) {
    for (auto& p : ps) p = p.to(torch::kCUDA);
    return ps;
  };
  auto want_p = on_cuda(Params());
  torch::optim::AdamW want(Groups(want_p, decayed, plain));
  RunSteps(want, want_p);
  auto got_p = on_cuda(Params());
  FusedCpuAdamW got(Groups(got_p, decayed, plain));
  RunSteps(got, got_p);
  for (size_t i = 0; i < got_p.size(); ++i) {
    ExpectClose(got_p[i].cpu(), want_p[i].cpu(), "param " + std::to_string(i));
    EXPECT_EQ(StepOf(got, got_p[i]), StepOf(want, want_p[i])) << i;
    const torch::Tensor m = StateTensor<torch::optim::AdamWParamState>(got, got_p[i], kExpAvg);
    EXPECT_TRUE(m.is_cuda()) << i;
    ExpectClose(m.cpu(), StateTensor<torch::optim::AdamWParamState>(want, want_p[i], kExpAvg).cpu(),
                "exp_avg " + std::to_string(i));
  }
  got.set_bias_correction(false);  // not on ATen's kernel
  EXPECT_THROW(got.step(), c10::Error);
}

TEST(AtenFusedAdamWBuildTest, TheTestRouteNeedsTheOp) {
  FusedCpuAdamW opt(Params(), torch::optim::AdamWOptions(1e-2));
  if (kHasAtenFusedAdamW) {
    opt.set_cpu_through_aten_fused(true);
    EXPECT_TRUE(opt.cpu_through_aten_fused());
  } else {
    EXPECT_THROW(opt.set_cpu_through_aten_fused(true), c10::Error);
  }
}

}  // namespace
}  // namespace loom::optim
