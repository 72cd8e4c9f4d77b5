// transformers.AdamW (transformers 4.38–4.41, optimization.py; `--optim adamw_hf`) as a
// torch::optim::Optimizer. Its arithmetic differs from torch.optim.AdamW (`adamw_torch`):
//   - eps is added to sqrt(v) before bias correction, and the bias corrections are folded
//     into the step size: p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps);
//   - weight decay is applied AFTER that update, and only when weight_decay > 0:
//     p += p * (-lr * weight_decay)  (torch decays p by (1 - lr*wd) BEFORE the update).
// Per parameter with a gradient (parameters whose grad() is undefined are skipped; a zero
// gradient still counts, so decay applies to e.g. untouched embedding rows):
//   t += 1; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; then the two lines above.
// With correct_bias = false the step size is plain lr. Sparse gradients are rejected.
// State per parameter (HfAdamWParamState): step (int), exp_avg, exp_avg_sq — the keys of
// the Python optimizer's state dict.
//
// Example:
//   HfAdamW opt(groups, HfAdamWOptions(2e-5).betas({0.9, 0.999}).eps(1e-8));
//   loss.backward(); opt.step();
#ifndef LOOM_OPTIM_HF_ADAMW_H_
#define LOOM_OPTIM_HF_ADAMW_H_

#include <ATen/ATen.h>
#include <torch/arg.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <tuple>
#include <vector>

namespace loom::optim {

struct HfAdamWOptions : public torch::optim::OptimizerCloneableOptions<HfAdamWOptions> {
  HfAdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: `= {}` defaults need it implicit
  TORCH_ARG(double, lr);
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-6;  // transformers' default; the Trainer passes adam_epsilon
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(bool, correct_bias) = true;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct HfAdamWParamState : public torch::optim::OptimizerCloneableParamState<HfAdamWParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(at::Tensor, exp_avg);
  TORCH_ARG(at::Tensor, exp_avg_sq);
};

class HfAdamW : public torch::optim::Optimizer {
 public:
  // Throws c10::Error (like the Python constructor's ValueError) when lr < 0, eps < 0 or a
  // beta is outside [0, 1); CreateOptimizer validates first and returns a Status instead.
  explicit HfAdamW(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                   HfAdamWOptions defaults = {});
  explicit HfAdamW(std::vector<at::Tensor> params, HfAdamWOptions defaults = {})
      : HfAdamW({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  at::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace loom::optim

#endif  // LOOM_OPTIM_HF_ADAMW_H_
