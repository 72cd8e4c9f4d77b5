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

// `states` is Optimizer::state(): parameter -> its state, created here at the first step.
template <typename State, typename Options, typename StateMap>
State& StateOf(StateMap& states, const at::Tensor& p, const Options& options) {
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
    auto state = std::make_unique<State>();
    state->step(0);
    state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    if (options.amsgrad()) {
      state->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    }
    it = states.emplace(std::move(key), std::move(state)).first;
  }
  return static_cast<State&>(*it->second);
}

// One parameter's update, torch 2.x `_single_tensor_adam` (decoupled weight decay for AdamW,
// L2 decay added to the gradient for Adam).
template <typename State, typename Options>
void Update(at::Tensor p, at::Tensor grad, State& state, const Options& options,
            bool decoupled) {
  const double lr = options.lr();
  const auto [beta1, beta2] = options.betas();
  if (options.weight_decay() != 0) {
    if (decoupled) {
      p.mul_(1 - lr * options.weight_decay());
    } else {
      grad = grad.add(p, options.weight_decay());
    }
  }
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

// Optimizer::step of either class on LibTorch >= 2.0.
template <typename Options, typename State>
at::Tensor Step(torch::optim::Optimizer& optimizer,
                torch::optim::Optimizer::LossClosure closure, bool decoupled) {
  torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "Adam and AdamW do not support sparse gradients");
      Update(p, p.grad(), StateOf<State>(optimizer.state(), p, options), options, decoupled);
    }
  }
  return loss;
}

}  // namespace

at::Tensor TorchAdamW::step(LossClosure closure) {
  if (!LOOM_TORCH_AT_LEAST(2, 0)) return torch::optim::AdamW::step(std::move(closure));
  return Step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(
      *this, std::move(closure), /*decoupled=*/true);
}

at::Tensor TorchAdam::step(LossClosure closure) {
  if (!LOOM_TORCH_AT_LEAST(2, 0)) return torch::optim::Adam::step(std::move(closure));
  return Step<torch::optim::AdamOptions, torch::optim::AdamParamState>(
      *this, std::move(closure), /*decoupled=*/false);
}

}  // namespace loom::optim
