#include "optim/torch_adamw.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

#include "base/torch_compat.h"

namespace loom::optim {
namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;

// `states` is Optimizer::state(): parameter -> its state, created here at the first step.
template <typename StateMap>
AdamWParamState& StateOf(StateMap& states, const at::Tensor& p, const AdamWOptions& options) {
  // LibTorch's own key for a parameter's state: its TensorImpl* (2.x), or that pointer
  // printed as text (1.13, c10::guts::to_string).
  typename StateMap::key_type key;
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    key = text.str();
  } else {
    key = p.unsafeGetTensorImpl();
  }
  auto it = states.find(key);
  if (it == states.end()) {
    auto state = std::make_unique<AdamWParamState>();
    state->step(0);
    state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    if (options.amsgrad()) {
      state->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    }
    it = states.emplace(std::move(key), std::move(state)).first;
  }
  return static_cast<AdamWParamState&>(*it->second);
}

// One parameter's update, torch 2.x `_single_tensor_adam` (decoupled weight decay).
void Update(at::Tensor p, const at::Tensor& grad, AdamWParamState& state,
            const AdamWOptions& options) {
  const double lr = options.lr();
  const auto [beta1, beta2] = options.betas();
  if (options.weight_decay() != 0) p.mul_(1 - lr * options.weight_decay());
  state.step(state.step() + 1);
  state.exp_avg().lerp_(grad, 1 - beta1);
  state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double step = static_cast<double>(state.step());
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, step));
  at::Tensor denom;
  if (options.amsgrad()) {
    at::maximum_out(state.max_exp_avg_sq(), state.max_exp_avg_sq(), state.exp_avg_sq());
    denom = (state.max_exp_avg_sq().sqrt() / bias_correction2_sqrt).add_(options.eps());
  } else {
    denom = (state.exp_avg_sq().sqrt() / bias_correction2_sqrt).add_(options.eps());
  }
  p.addcdiv_(state.exp_avg(), denom, -lr / bias_correction1);
}

}  // namespace

at::Tensor TorchAdamW::step(LossClosure closure) {
  if (!LOOM_TORCH_AT_LEAST(2, 0)) return torch::optim::AdamW::step(std::move(closure));
  torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "AdamW does not support sparse gradients");
      Update(p, p.grad(), StateOf(state(), p, options), options);
    }
  }
  return loss;
}

}  // namespace loom::optim
