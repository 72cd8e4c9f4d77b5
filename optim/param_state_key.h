// The key under which a torch::optim::Optimizer keeps a parameter's state in
// Optimizer::state().
//
// Contract: ParamStateKey(p) is the key LibTorch's own optimizers use for `p`:
// the TensorImpl address printed as a string in LibTorch 1.13, the raw TensorImpl pointer
// in LibTorch 2.x (the map's key type decides, so the same code builds against both).
// loom's own optimizers (HfAdamW, Adafactor) use it too, so a checkpointer can find any
// optimizer's per-parameter state the same way.
//
// Example:
//   auto it = optimizer.state().find(ParamStateKey(param));
//   if (it != optimizer.state().end()) { ... *it->second ... }
#ifndef LOOM_OPTIM_PARAM_STATE_KEY_H_
#define LOOM_OPTIM_PARAM_STATE_KEY_H_

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

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

}  // namespace loom::optim

#endif  // LOOM_OPTIM_PARAM_STATE_KEY_H_
