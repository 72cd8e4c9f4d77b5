#include "optim/fused_cpu_optim.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <memory>
#include <string>

namespace loom::optim {
namespace {

bool Fusable(const torch::Tensor& p) {
  const torch::Tensor& g = p.grad();
  return p.device().is_cpu() && p.scalar_type() == at::kFloat && p.is_contiguous() &&
         g.device().is_cpu() && g.scalar_type() == at::kFloat && !g.is_sparse() &&
         g.is_contiguous() && g.sizes() == p.sizes();
}

// Whether every parameter with a gradient can take the fused pass.
bool AllFusable(std::vector<torch::optim::OptimizerParamGroup>& groups, bool amsgrad_of_any) {
  if (amsgrad_of_any) return false;
  for (auto& group : groups) {
    for (auto& p : group.params()) {
      if (p.grad().defined() && !Fusable(p)) return false;
    }
  }
  return true;
}

template <typename State, typename Init>
State& StateOf(torch::optim::Optimizer& opt, ska::flat_hash_map<std::string,
               std::unique_ptr<torch::optim::OptimizerParamState>>& states,
               const at::Tensor& p, const Init& init) {
  const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
  auto it = states.find(key);
  if (it == states.end()) {
    auto state = std::make_unique<State>();
    init(*state);
    it = states.emplace(key, std::move(state)).first;
  }
  return static_cast<State&>(*it->second);
}

template <typename State, typename Options>
void AdamStep(torch::optim::Optimizer& opt, std::vector<torch::optim::OptimizerParamGroup>& groups,
              ska::flat_hash_map<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>&
                  states,
              bool adamw_mode, bool bias_correction, CpuIsa isa,
              const std::function<HalfCopy(const at::Tensor&)>& half_of) {
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      State& state = StateOf<State>(opt, states, p, [&](State& s) {
        s.step(0);
        s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      });
      state.step(state.step() + 1);
      const AdamStepScalars s =
          AdamScalarsFor(o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
                         o.weight_decay(), adamw_mode, bias_correction, state.step());
      AdamUpdate(s, p.data_ptr<float>(), p.grad().data_ptr<float>(),
                 state.exp_avg().template data_ptr<float>(),
                 state.exp_avg_sq().template data_ptr<float>(), p.numel(), half_of(p), isa);
    }
  }
}

torch::Tensor RunClosure(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
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

void FusedCpuExtras::CheckFallbackAllowed(const char* optimizer) const {
  TORCH_CHECK(bias_correction_ && half_copies_.empty(), optimizer,
              ": a parameter is not a contiguous CPU float32 tensor with a dense gradient (or "
              "amsgrad is on), so torch's own step would run, and it has no ",
              bias_correction_ ? "16-bit copies" : "bias_correction false",
              "; keep the parameters on the CPU in float32");
}

torch::Tensor FusedCpuAdamW::step(LossClosure closure) {
  bool amsgrad = false;
  for (auto& g : param_groups_) {
    amsgrad |= static_cast<const torch::optim::AdamWOptions&>(g.options()).amsgrad();
  }
  if (!AllFusable(param_groups_, amsgrad)) {
    CheckFallbackAllowed("FusedCpuAdamW");
    return torch::optim::AdamW::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  AdamStep<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(
      *this, param_groups_, state_, /*adamw_mode=*/true, bias_correction(), isa(),
      [this](const at::Tensor& p) { return HalfCopyOf(p); });
  return loss;
}

torch::Tensor FusedCpuAdam::step(LossClosure closure) {
  bool amsgrad = false;
  for (auto& g : param_groups_) {
    amsgrad |= static_cast<const torch::optim::AdamOptions&>(g.options()).amsgrad();
  }
  if (!AllFusable(param_groups_, amsgrad)) {
    CheckFallbackAllowed("FusedCpuAdam");
    return torch::optim::Adam::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  AdamStep<torch::optim::AdamParamState, torch::optim::AdamOptions>(
      *this, param_groups_, state_, /*adamw_mode=*/false, bias_correction(), isa(),
      [this](const at::Tensor& p) { return HalfCopyOf(p); });
  return loss;
}

torch::Tensor FusedCpuHfAdamW::step(LossClosure closure) {
  if (!AllFusable(param_groups_, false)) {
    CheckFallbackAllowed("FusedCpuHfAdamW");
    return HfAdamW::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const HfAdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = StateOf<HfAdamWParamState>(*this, state_, p, [&](HfAdamWParamState& s) {
        s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      });
      state.step(state.step() + 1);
      const AdamStepScalars s =
          HfAdamScalarsFor(o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
                           o.weight_decay(), o.correct_bias(), state.step());
      AdamUpdate(s, p.data_ptr<float>(), p.grad().data_ptr<float>(),
                 state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(),
                 p.numel(), HalfCopyOf(p), isa());
    }
  }
  return loss;
}

torch::Tensor FusedCpuAdagrad::step(LossClosure closure) {
  if (!AllFusable(param_groups_, false)) {
    CheckFallbackAllowed("FusedCpuAdagrad");
    return torch::optim::Adagrad::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = RunClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdagradOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = StateOf<torch::optim::AdagradParamState>(
          *this, state_, p, [&](torch::optim::AdagradParamState& s) {
            s.step(0);
            s.sum(torch::full_like(p, o.initial_accumulator_value(),
                                   at::MemoryFormat::Preserve));
          });
      state.step(state.step() + 1);
      const AdagradStepScalars s =
          AdagradScalarsFor(o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), state.step());
      AdagradUpdate(s, p.data_ptr<float>(), p.grad().data_ptr<float>(),
                    state.sum().data_ptr<float>(), p.numel(), HalfCopyOf(p), isa());
    }
  }
  return loss;
}

void FusedAdamWUpdate(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                      double lr, double beta1, double beta2, double eps, double weight_decay,
                      double bias_correction1, double bias_correction2) {
  AdamStepScalars s = AdamScalarsFor(lr, beta1, beta2, eps, weight_decay, true, true, 1);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  s.bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  AdamUpdate(s, param, grad, exp_avg, exp_avg_sq, n, {}, DetectCpuIsa());
}

}  // namespace loom::optim
