#include "optim/fused_cpu_optim.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <tuple>
#include <utility>

#include "optim/param_state.h"

namespace loom::optim {
namespace {

bool Fusable(const torch::Tensor& p) {
  const torch::Tensor& g = p.grad();
  return p.device().is_cpu() && p.scalar_type() == at::kFloat && p.is_contiguous() &&
         g.device().is_cpu() && g.scalar_type() == at::kFloat && !g.is_sparse() &&
         g.is_contiguous() && g.sizes() == p.sizes();
}

// Whether every parameter with a gradient can take the fused pass (never with amsgrad).
bool AllFusable(const std::vector<torch::optim::OptimizerParamGroup>& groups, bool amsgrad) {
  if (amsgrad) return false;
  for (const auto& group : groups) {
    for (const auto& p : group.params()) {
      if (p.grad().defined() && !Fusable(p)) return false;
    }
  }
  return true;
}

// Adam's state (torch's AdamParamState / AdamWParamState, HF's HfAdamWParamState) for p,
// zero moments on first use.
template <typename State>
State& MomentsOf(ParamStateMap& states, const at::Tensor& p) {
  return StateOf<State>(states, p, [&] {
    auto fresh = std::make_unique<State>();
    fresh->step(0);
    fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    return fresh;
  });
}

// One Adam-family step over every parameter with a gradient: `scalars(options, step)` gives
// the kernel's scalars for the parameter's group options and its (incremented) step.
// Parameters for which `skip` is true are left alone.
template <typename State, typename Options, typename Scalars>
void AdamFamilyStep(std::vector<torch::optim::OptimizerParamGroup>& groups, ParamStateMap& states,
                    CpuIsa isa, const std::function<HalfCopy(const at::Tensor&)>& half_of,
                    const Scalars& scalars,
                    const std::function<bool(const at::Tensor&)>& skip = nullptr) {
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined() || (skip && skip(p))) continue;
      State& state = MomentsOf<State>(states, p);
      state.step(state.step() + 1);
      AdamUpdate(scalars(o, state.step()), p.data_ptr<float>(), p.grad().data_ptr<float>(),
                 state.exp_avg().template data_ptr<float>(),
                 state.exp_avg_sq().template data_ptr<float>(), p.numel(), half_of(p), isa);
    }
  }
}

// torch's Adam (adamw_mode false: L2) or AdamW, DeepSpeedCPUAdam's two modes.
template <typename State, typename Options>
void TorchAdamStep(std::vector<torch::optim::OptimizerParamGroup>& groups, ParamStateMap& states,
                   bool adamw_mode, bool bias_correction, CpuIsa isa,
                   const std::function<HalfCopy(const at::Tensor&)>& half_of,
                   const std::function<bool(const at::Tensor&)>& skip = nullptr) {
  AdamFamilyStep<State, Options>(
      groups, states, isa, half_of,
      [&](const Options& o, int64_t step) {
        return AdamScalarsFor(o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
                              o.weight_decay(), adamw_mode, bias_correction, step);
      },
      skip);
}

template <typename Options>
bool AnyAmsgrad(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (const auto& g : groups) {
    if (static_cast<const Options&>(g.options()).amsgrad()) return true;
  }
  return false;
}

// --- AdamW's at::_fused_adamw_ path (torch.optim.AdamW(fused=True)) ---------------------------

bool AtenFusedDtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf || t == at::kDouble;
}

// What torch 2.x's fused AdamW takes (_device_dtype_check_for_fused: a floating dtype on a fused
// device; the kernel: params, grads and states of one dtype, device and strides), restricted to
// contiguous tensors so that the state's strides match whatever made it (a checkpoint too).
// CPU parameters only with `cpu_too` (the test route).
bool AtenFusable(const at::Tensor& p, bool cpu_too) {
  if (!kHasAtenFusedAdamW) return false;
  const at::Tensor& g = p.grad();
  return (p.is_cuda() || (cpu_too && p.device().is_cpu())) && AtenFusedDtype(p.scalar_type()) &&
         p.is_contiguous() && g.layout() == at::kStrided && g.device() == p.device() &&
         g.scalar_type() == p.scalar_type() && g.is_contiguous() && g.sizes() == p.sizes();
}

// Whether every parameter with a gradient takes at::_fused_adamw_ or loom's one-pass CPU kernel
// (which has no amsgrad); otherwise torch's AdamW steps them all.
bool AdamWAllFused(const std::vector<torch::optim::OptimizerParamGroup>& groups, bool cpu_too) {
  for (const auto& group : groups) {
    const bool amsgrad = static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad();
    for (const auto& p : group.params()) {
      if (!p.grad().defined() || AtenFusable(p, cpu_too)) continue;
      if (amsgrad || !Fusable(p)) return false;
    }
  }
  return true;
}

// The parameters of one param group on one (device, dtype): one at::_fused_adamw_ call.
struct AtenFusedBucket {
  at::Device device;
  at::ScalarType dtype;
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<int64_t> steps;  // already incremented
};

// torch's `_foreach_add_(device_state_steps, 1)` then `torch._fused_adamw_(...)`, with the steps
// taken from loom's int64 state: float32 (torch's fused step dtype) on the bucket's device.
void StepBucket(AtenFusedBucket& b, const torch::optim::AdamWOptions& o) {
#if LOOM_TORCH_AT_LEAST(2, 4)
  const bool cuda = b.device.is_cuda();
  at::Tensor steps = at::empty({static_cast<int64_t>(b.steps.size())},
                               at::TensorOptions().dtype(at::kFloat).pinned_memory(cuda));
  float* host = steps.data_ptr<float>();
  for (size_t i = 0; i < b.steps.size(); ++i) host[i] = static_cast<float>(b.steps[i]);
  // From pinned memory the copy is asynchronous; the caching host allocator keeps the buffer
  // until the copy has run.
  if (cuda) steps = steps.to(at::TensorOptions().device(b.device), /*non_blocking=*/true);
  const std::vector<at::Tensor> state_steps = steps.unbind(0);
  at::_fused_adamw_(b.params, b.grads, b.exp_avgs, b.exp_avg_sqs, b.max_exp_avg_sqs, state_steps,
                    o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                    o.eps(), o.amsgrad(), /*maximize=*/false);
#else
  TORCH_CHECK(false, "at::_fused_adamw_ needs LibTorch >= 2.4; this is ", base::kLibTorchVersion);
#endif
}

// Steps every parameter that AtenFusable takes: per param group, one at::_fused_adamw_ call per
// (device, dtype) in order of first appearance.
void AtenFusedAdamWStep(std::vector<torch::optim::OptimizerParamGroup>& groups,
                        ParamStateMap& states, bool cpu_too) {
  for (auto& group : groups) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<AtenFusedBucket> buckets;
    for (auto& p : group.params()) {
      if (!p.grad().defined() || !AtenFusable(p, cpu_too)) continue;
      auto& state = MomentsOf<torch::optim::AdamWParamState>(states, p);
      if (o.amsgrad() && !state.max_exp_avg_sq().defined()) {
        state.max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      }
      state.step(state.step() + 1);
      auto it = std::find_if(buckets.begin(), buckets.end(), [&](const AtenFusedBucket& b) {
        return b.device == p.device() && b.dtype == p.scalar_type();
      });
      if (it == buckets.end()) {
        buckets.push_back(AtenFusedBucket{p.device(), p.scalar_type()});
        it = std::prev(buckets.end());
      }
      it->params.push_back(p);
      it->grads.push_back(p.grad());
      it->exp_avgs.push_back(state.exp_avg());
      it->exp_avg_sqs.push_back(state.exp_avg_sq());
      if (o.amsgrad()) it->max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      it->steps.push_back(state.step());
    }
    for (AtenFusedBucket& b : buckets) StepBucket(b, o);
  }
}

}  // namespace

void FusedCpuExtras::SetHalfCopy(const at::Tensor& param, at::Tensor copy) {
  TORCH_CHECK(copy.device().is_cpu() && copy.is_contiguous() &&
                  (copy.scalar_type() == at::kBFloat16 || copy.scalar_type() == at::kHalf) &&
                  copy.numel() == param.numel(),
              "SetHalfCopy: the copy must be a contiguous CPU bf16 or fp16 tensor of ",
              param.numel(), " elements");
  half_copies_[param.unsafeGetTensorImpl()] = std::move(copy);
}

HalfCopy FusedCpuExtras::HalfCopyOf(const at::Tensor& param) const {
  auto it = half_copies_.find(param.unsafeGetTensorImpl());
  if (it == half_copies_.end()) return {};
  return HalfCopy{it->second.data_ptr(), it->second.scalar_type()};
}

std::function<HalfCopy(const at::Tensor&)> FusedCpuExtras::HalfCopies() const {
  return [this](const at::Tensor& p) { return HalfCopyOf(p); };
}

void FusedCpuExtras::set_cpu_through_aten_fused(bool v) {
  TORCH_CHECK(!v || kHasAtenFusedAdamW, "set_cpu_through_aten_fused: LibTorch ",
              base::kLibTorchVersion, " has no CPU kernel of at::_fused_adamw_ (torch >= 2.4)");
  cpu_through_aten_fused_ = v;
}

void FusedCpuExtras::CheckAtenFusedAllowed(const at::Tensor& param) const {
  TORCH_CHECK(bias_correction_ && HalfCopyOf(param).out == nullptr, "FusedCpuAdamW: a ",
              param.device(), " ", param.scalar_type(),
              " parameter takes ATen's fused AdamW (torch.optim.AdamW(fused=True)), which has no ",
              bias_correction_ ? "16-bit copies" : "bias_correction false",
              "; keep the parameters on the CPU in float32");
}

void FusedCpuExtras::CheckFallbackAllowed(const char* optimizer) const {
  TORCH_CHECK(bias_correction_ && half_copies_.empty(), optimizer,
              ": a parameter is not a contiguous CPU float32 tensor with a dense gradient (or "
              "amsgrad is on), so torch's own step would run, and it has no ",
              bias_correction_ ? "16-bit copies" : "bias_correction false",
              "; keep the parameters on the CPU in float32");
}

torch::Tensor FusedCpuAdamW::step(LossClosure closure) {
  const bool cpu_too = cpu_through_aten_fused();
  if (!AdamWAllFused(param_groups_, cpu_too)) {
    CheckFallbackAllowed("FusedCpuAdamW");
    return torch::optim::AdamW::step(closure);
  }
  for (const auto& group : param_groups_) {  // refused before anything moves
    for (const auto& p : group.params()) {
      if (p.grad().defined() && AtenFusable(p, cpu_too)) CheckAtenFusedAllowed(p);
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  AtenFusedAdamWStep(param_groups_, state_, cpu_too);
  TorchAdamStep<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(
      param_groups_, state_, /*adamw_mode=*/true, bias_correction(), isa(), HalfCopies(),
      [cpu_too](const at::Tensor& p) { return AtenFusable(p, cpu_too); });
  return loss;
}

torch::Tensor FusedCpuAdam::step(LossClosure closure) {
  if (!AllFusable(param_groups_, AnyAmsgrad<torch::optim::AdamOptions>(param_groups_))) {
    CheckFallbackAllowed("FusedCpuAdam");
    return torch::optim::Adam::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  TorchAdamStep<torch::optim::AdamParamState, torch::optim::AdamOptions>(
      param_groups_, state_, /*adamw_mode=*/false, bias_correction(), isa(), HalfCopies());
  return loss;
}

torch::Tensor FusedCpuHfAdamW::step(LossClosure closure) {
  if (!AllFusable(param_groups_, false)) {
    CheckFallbackAllowed("FusedCpuHfAdamW");
    return HfAdamW::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  AdamFamilyStep<HfAdamWParamState, HfAdamWOptions>(
      param_groups_, state_, isa(), HalfCopies(), [](const HfAdamWOptions& o, int64_t step) {
        return HfAdamScalarsFor(o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
                                o.weight_decay(), o.correct_bias(), step);
      });
  return loss;
}

torch::Tensor FusedCpuAdagrad::step(LossClosure closure) {
  if (!AllFusable(param_groups_, false)) {
    CheckFallbackAllowed("FusedCpuAdagrad");
    return torch::optim::Adagrad::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdagradOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      // torch's Adagrad makes the state at construction; parameters swapped in later (the ZeRO
      // strategies' partitions) get theirs on first use.
      auto& state = StateOf<torch::optim::AdagradParamState>(state_, p, [&] {
        auto fresh = std::make_unique<torch::optim::AdagradParamState>();
        fresh->step(0);
        fresh->sum(at::full_like(p, o.initial_accumulator_value(), at::MemoryFormat::Preserve));
        return fresh;
      });
      state.step(state.step() + 1);
      AdagradUpdate(
          AdagradScalarsFor(o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), state.step()),
          p.data_ptr<float>(), p.grad().data_ptr<float>(), state.sum().data_ptr<float>(), p.numel(),
          HalfCopyOf(p), isa());
    }
  }
  return loss;
}

}  // namespace loom::optim
