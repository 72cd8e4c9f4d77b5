// Per-parameter optimizer state: where a torch::optim::Optimizer keeps it, and the pieces
// every loom optimizer's step() shares.
//
// Contract: ParamStateKey(p) is the key LibTorch's own optimizers use for `p`:
// the TensorImpl address printed as a string in LibTorch 1.13, the raw TensorImpl pointer
// in LibTorch 2.x (the map's key type decides, so the same code builds against both).
// loom's own optimizers (HfAdamW, Adafactor) use it too, so a checkpointer can find any
// optimizer's per-parameter state the same way.
// StateOf<S>(state, p, init) returns p's state as S, creating it with init() on first use.
// EvaluateClosure(closure) runs a step's loss closure with grad mode on (torch's contract for
// Optimizer::step) and returns its loss, or an undefined tensor without a closure.
//
// Example:
//   auto it = optimizer.state().find(ParamStateKey(param));
//   if (it != optimizer.state().end()) { ... *it->second ... }
//   auto& s = StateOf<HfAdamWParamState>(state_, p, [&] { return FreshState(p); });
#ifndef LOOM_OPTIM_PARAM_STATE_H_
#define LOOM_OPTIM_PARAM_STATE_H_

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

namespace loom::optim {

using ParamStateMap = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;
using ParamStateMapKey = typename ParamStateMap::key_type;

namespace internal {
template <typename Key>
Key StateKeyOf(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // what c10::guts::to_string(TensorImpl*) produces
    key << param.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}
}  // namespace internal

inline ParamStateMapKey ParamStateKey(const at::Tensor& param) {
  return internal::StateKeyOf<ParamStateMapKey>(param);
}

template <typename State, typename Init>
State& StateOf(ParamStateMap& state, const at::Tensor& param, Init init) {
  std::unique_ptr<torch::optim::OptimizerParamState>& slot = state[ParamStateKey(param)];
  if (slot == nullptr) slot = init();
  return static_cast<State&>(*slot);
}

inline at::Tensor EvaluateClosure(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace loom::optim

#endif  // LOOM_OPTIM_PARAM_STATE_H_
