// The Python state-dict layout of each optimizer optimizer_state.h supports, one table each:
// param_group keys in the order the Python torch of this build's LibTorch writes them (torch
// 1.13, or torch 2.11 on LibTorch >= 2.11, which adds differentiable / fused /
// decoupled_weight_decay keys and RMSprop's tensor step; transformers 4.38 for its own
// optimizers), then per-parameter state keys in the same order. The fused CPU optimizers
// (fused_cpu_optim.h) share their torch optimizer's options and state, so its layout.
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "base/torch_compat.h"
#include "checkpoint/optimizer_state_codec.h"
#include "optim/adafactor.h"
#include "optim/hf_adamw.h"

namespace loom::checkpoint::optimizer_state_internal {
namespace {

// clang-format off
// The option `name` of `O` under the Python key "name".
#define OPTION(name) Option<O>(#name, [](auto& o) -> auto& { return o.name(); })
// The state tensor `name` of `S` under the Python key "name".
#define STATE(name, entry) Tensor<S>(#name, entry, [](auto& s) -> auto& { return s.name(); })
// clang-format on

// Python's layout is torch 2.11's (else torch 1.13's).
constexpr bool kTorch211 = LOOM_TORCH_AT_LEAST(2, 11);

// `keys`, then `torch211_keys` when the layout is torch 2.11's.
std::vector<GroupKey> Keys(std::vector<GroupKey> keys, std::vector<GroupKey> torch211_keys) {
  if (kTorch211) keys.insert(keys.end(), torch211_keys.begin(), torch211_keys.end());
  return keys;
}

// Adam and AdamW keep the same state.
template <typename S>
std::vector<StateKey> AdamState() {
  return {Step<S>(Entry::kStepFloatTensor), STATE(exp_avg, Entry::kTensor),
          STATE(exp_avg_sq, Entry::kTensor), STATE(max_exp_avg_sq, Entry::kOptionalTensor)};
}

OptimizerLayout AdamW() {
  using O = torch::optim::AdamWOptions;
  using S = torch::optim::AdamWParamState;
  if (kTorch211) {
    return Layout<O, S>(
        "AdamW",
        {OPTION(lr), OPTION(betas), OPTION(eps), OPTION(weight_decay), OPTION(amsgrad),
         Fixed("maximize", false), Fixed("foreach", IValue()), Fixed("capturable", false),
         Fixed("differentiable", false), Fixed("fused", IValue()),
         Fixed("decoupled_weight_decay", true)},
        AdamState<S>());
  }
  return Layout<O, S>(
      "AdamW",
      {OPTION(lr), OPTION(betas), OPTION(eps), OPTION(weight_decay), OPTION(amsgrad),
       Fixed("foreach", IValue()), Fixed("maximize", false), Fixed("capturable", false)},
      AdamState<S>());
}

OptimizerLayout Adam() {
  using O = torch::optim::AdamOptions;
  using S = torch::optim::AdamParamState;
  return Layout<O, S>(
      "Adam",
      Keys({OPTION(lr), OPTION(betas), OPTION(eps), OPTION(weight_decay), OPTION(amsgrad),
            Fixed("maximize", false), Fixed("foreach", IValue()), Fixed("capturable", false),
            Fixed("differentiable", false),
            kTorch211 ? Fixed("fused", IValue()) : Fixed("fused", false)},
           {Fixed("decoupled_weight_decay", false)}),
      AdamState<S>());
}

OptimizerLayout Sgd() {
  using O = torch::optim::SGDOptions;
  using S = torch::optim::SGDParamState;
  return Layout<O, S>(
      "SGD",
      Keys({OPTION(lr), OPTION(momentum), OPTION(dampening), OPTION(weight_decay),
            OPTION(nesterov), Fixed("maximize", false), Fixed("foreach", IValue()),
            Fixed("differentiable", false)},
           {Fixed("fused", IValue())}),
      {STATE(momentum_buffer, Entry::kTensorOrNoState)});
}

OptimizerLayout Adagrad() {
  using O = torch::optim::AdagradOptions;
  using S = torch::optim::AdagradParamState;
  return Layout<O, S>(
      "Adagrad",
      Keys({OPTION(lr), OPTION(lr_decay), OPTION(eps), OPTION(weight_decay),
            OPTION(initial_accumulator_value), Fixed("foreach", IValue()),
            Fixed("maximize", false)},
           {Fixed("differentiable", false), Fixed("fused", IValue())}),
      {Step<S>(Entry::kStepFloatTensor), STATE(sum, Entry::kTensor)});
}

OptimizerLayout Rmsprop() {
  using O = torch::optim::RMSpropOptions;
  using S = torch::optim::RMSpropParamState;
  if (kTorch211) {
    return Layout<O, S>(
        "RMSprop",
        {OPTION(lr), OPTION(momentum), OPTION(alpha), OPTION(eps), OPTION(centered),
         OPTION(weight_decay), Fixed("capturable", false), Fixed("foreach", IValue()),
         Fixed("maximize", false), Fixed("differentiable", false)},
        {Step<S>(Entry::kStepFloatTensor), STATE(square_avg, Entry::kTensor),
         STATE(momentum_buffer, Entry::kOptionalTensor), STATE(grad_avg, Entry::kOptionalTensor)});
  }
  return Layout<O, S>(
      "RMSprop",
      {OPTION(lr), OPTION(momentum), OPTION(alpha), OPTION(eps), OPTION(centered),
       OPTION(weight_decay), Fixed("foreach", IValue()), Fixed("maximize", false),
       Fixed("differentiable", false)},
      {Step<S>(Entry::kStepInt), STATE(square_avg, Entry::kTensor),
       STATE(momentum_buffer, Entry::kOptionalTensor), STATE(grad_avg, Entry::kOptionalTensor)});
}

OptimizerLayout HfAdamW() {
  using O = optim::HfAdamWOptions;
  using S = optim::HfAdamWParamState;
  return Layout<O, S>(
      "transformers.AdamW (adamw_hf)",
      {OPTION(lr), OPTION(betas), OPTION(eps), OPTION(weight_decay), OPTION(correct_bias)},
      {Step<S>(Entry::kStepInt), STATE(exp_avg, Entry::kTensor),
       STATE(exp_avg_sq, Entry::kTensor)});
}

OptimizerLayout Adafactor() {
  using O = optim::AdafactorOptions;
  using S = optim::AdafactorParamState;
  return Layout<O, S>(
      "transformers.Adafactor (adafactor)",
      {OPTION(lr), OPTION(eps), OPTION(clip_threshold), OPTION(decay_rate), OPTION(beta1),
       OPTION(weight_decay), OPTION(scale_parameter), OPTION(relative_step), OPTION(warmup_init)},
      {Step<S>(Entry::kStepInt), STATE(exp_avg, Entry::kOptionalTensor),
       STATE(exp_avg_sq_row, Entry::kFactoredRow), STATE(exp_avg_sq_col, Entry::kFactoredCol),
       STATE(exp_avg_sq, Entry::kUnfactored),
       Tensor<S>(
           "RMS", Entry::kScalarOrZero, [](auto& s) -> auto& { return s.rms(); })});
}

#undef OPTION
#undef STATE

}  // namespace

const std::vector<OptimizerLayout>& Layouts() {
  static const auto* layouts = new std::vector<OptimizerLayout>{
      AdamW(), Adam(), Sgd(), Adagrad(), Rmsprop(), HfAdamW(), Adafactor(),
  };
  return *layouts;
}

}  // namespace loom::checkpoint::optimizer_state_internal
