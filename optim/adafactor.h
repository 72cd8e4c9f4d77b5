// transformers.Adafactor (transformers 4.38–4.41, optimization.py; `--optim adafactor`)
// as a torch::optim::Optimizer. The Trainer configures it with
// lr = learning_rate, scale_parameter = false, relative_step = false (the other options at
// their defaults); every option of the Python class is supported.
//
// Per parameter with a gradient g (undefined grads are skipped; fp16/bf16 parameters and
// gradients are computed in fp32 and copied back), at step t (1-based):
//   RMS(x)   = ||x||_2 / sqrt(numel(x))
//   lr_t     = (scale_parameter ? max(eps2, RMS(p)) : 1)
//              * (relative_step ? min(warmup_init ? 1e-6 t : 1e-2, 1/sqrt(t)) : lr)
//   beta2_t  = 1 - t^decay_rate;  u = g^2 + eps1
//   factored (dim >= 2): row = beta2_t row + (1-beta2_t) mean_{-1}(u),
//                        col = beta2_t col + (1-beta2_t) mean_{-2}(u),
//                        u = rsqrt(row / mean_{-1}(row))[..., None] * rsqrt(col)[..., None, :] * g
//   otherwise:           v = beta2_t v + (1-beta2_t) u;  u = rsqrt(v) * g
//   u /= max(1, RMS(u) / clip_threshold);  u *= lr_t
//   beta1 set:           m = beta1 m + (1-beta1) u;  u = m
//   weight_decay != 0:   p += p * (-weight_decay * lr_t)
//   p -= u
// State per parameter (AdafactorParamState): step, exp_avg (beta1 only), exp_avg_sq_row and
// exp_avg_sq_col (factored) or exp_avg_sq, and RMS — the keys of the Python state dict.
// Deviation: with scale_parameter, Python multiplies by a 0-dim float32 tensor lr_t; loom
// uses the same value as a double (differences at float rounding level).
//
// Example:
//   Adafactor opt(groups, AdafactorOptions(1e-3).scale_parameter(false).relative_step(false));
#ifndef LOOM_OPTIM_ADAFACTOR_H_
#define LOOM_OPTIM_ADAFACTOR_H_

#include <ATen/ATen.h>
#include <c10/util/Optional.h>
#include <torch/arg.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <tuple>
#include <vector>

namespace loom::optim {

struct AdafactorOptions : public torch::optim::OptimizerCloneableOptions<AdafactorOptions> {
  // nullopt = no external learning rate (only valid with relative_step).
  AdafactorOptions(c10::optional<double> lr = c10::nullopt)  // NOLINT: `= {}` defaults
      : lr_(lr) {}
  TORCH_ARG(c10::optional<double>, lr);
  using eps_t = std::tuple<double, double>;  // (eps1 for g^2, eps2 for the parameter scale)
  TORCH_ARG(eps_t, eps) = std::make_tuple(1e-30, 1e-3);
  TORCH_ARG(double, clip_threshold) = 1.0;
  TORCH_ARG(double, decay_rate) = -0.8;
  TORCH_ARG(c10::optional<double>, beta1) = c10::nullopt;
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(bool, scale_parameter) = true;
  TORCH_ARG(bool, relative_step) = true;
  TORCH_ARG(bool, warmup_init) = false;

 public:
  // The external learning rate; throws c10::Error when there is none.
  double get_lr() const override;
  void set_lr(const double lr) override { this->lr(lr); }
};

struct AdafactorParamState
    : public torch::optim::OptimizerCloneableParamState<AdafactorParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(at::Tensor, exp_avg);         // defined when beta1 is set
  TORCH_ARG(at::Tensor, exp_avg_sq_row);  // factored parameters (dim >= 2)
  TORCH_ARG(at::Tensor, exp_avg_sq_col);
  TORCH_ARG(at::Tensor, exp_avg_sq);  // other parameters
  TORCH_ARG(at::Tensor, rms);         // RMS of the parameter at the last step (0-dim)
};

class Adafactor : public torch::optim::Optimizer {
 public:
  // Throws c10::Error (like the Python constructor's ValueError) for lr together with
  // relative_step, or warmup_init without relative_step.
  explicit Adafactor(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                     AdafactorOptions defaults = {});
  explicit Adafactor(std::vector<at::Tensor> params, AdafactorOptions defaults = {})
      : Adafactor({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  at::Tensor step(LossClosure closure = nullptr) override;

  // lr_t of the formula above for a group and a parameter state (HF's Adafactor._get_lr).
  static double StepLr(const AdafactorOptions& group, const AdafactorParamState& state);
};

}  // namespace loom::optim

#endif  // LOOM_OPTIM_ADAFACTOR_H_
