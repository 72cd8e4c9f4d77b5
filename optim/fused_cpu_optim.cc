#include "optim/fused_cpu_optim.h"

#include <c10/util/Exception.h>

#include <memory>
#include <tuple>

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
template <typename State, typename Options, typename Scalars>
void AdamFamilyStep(std::vector<torch::optim::OptimizerParamGroup>& groups,
                    ParamStateMap& states, CpuIsa isa,
                    const std::function<HalfCopy(const at::Tensor&)>& half_of,
                    const Scalars& scalars) {
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
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
                   const std::function<HalfCopy(const at::Tensor&)>& half_of) {
  AdamFamilyStep<State, Options>(groups, states, isa, half_of,
                                 [&](const Options& o, int64_t step) {
                                   return AdamScalarsFor(
                                       o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()),
                                       o.eps(), o.weight_decay(), adamw_mode, bias_correction,
                                       step);
                                 });
}

template <typename Options>
bool AnyAmsgrad(const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  for (const auto& g : groups) {
    if (static_cast<const Options&>(g.options()).amsgrad()) return true;
  }
  return false;
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

void FusedCpuExtras::CheckFallbackAllowed(const char* optimizer) const {
  TORCH_CHECK(bias_correction_ && half_copies_.empty(), optimizer,
              ": a parameter is not a contiguous CPU float32 tensor with a dense gradient (or "
              "amsgrad is on), so torch's own step would run, and it has no ",
              bias_correction_ ? "16-bit copies" : "bias_correction false",
              "; keep the parameters on the CPU in float32");
}

torch::Tensor FusedCpuAdamW::step(LossClosure closure) {
  if (!AllFusable(param_groups_, AnyAmsgrad<torch::optim::AdamWOptions>(param_groups_))) {
    CheckFallbackAllowed("FusedCpuAdamW");
    return torch::optim::AdamW::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  TorchAdamStep<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(
      param_groups_, state_, /*adamw_mode=*/true, bias_correction(), isa(), HalfCopies());
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
      AdagradUpdate(AdagradScalarsFor(o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), state.step()),
                    p.data_ptr<float>(), p.grad().data_ptr<float>(), state.sum().data_ptr<float>(),
                    p.numel(), HalfCopyOf(p), isa());
    }
  }
  return loss;
}

}  // namespace loom::optim
