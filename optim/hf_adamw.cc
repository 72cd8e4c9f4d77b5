#include "optim/hf_adamw.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "optim/param_state.h"

namespace loom::optim {

HfAdamW::HfAdamW(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                 HfAdamWOptions defaults)
    : torch::optim::Optimizer(std::move(param_groups), std::make_unique<HfAdamWOptions>(defaults)) {
  // The checks of transformers.AdamW.__init__.
  TORCH_CHECK(defaults.lr() >= 0.0, "Invalid learning rate: ", defaults.lr(),
              " - should be >= 0.0");
  const auto [beta1, beta2] = defaults.betas();
  TORCH_CHECK(0.0 <= beta1 && beta1 < 1.0, "Invalid beta parameter: ", beta1,
              " - should be in [0.0, 1.0)");
  TORCH_CHECK(0.0 <= beta2 && beta2 < 1.0, "Invalid beta parameter: ", beta2,
              " - should be in [0.0, 1.0)");
  TORCH_CHECK(defaults.eps() >= 0.0, "Invalid epsilon value: ", defaults.eps(),
              " - should be >= 0.0");
}

at::Tensor HfAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  at::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const HfAdamWOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const at::Tensor& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(),
                  "Adam does not support sparse gradients, please consider SparseAdam instead");
      auto& state = StateOf<HfAdamWParamState>(state_, p, [&] {
        auto fresh = std::make_unique<HfAdamWParamState>();
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        return fresh;
      });
      state.step(state.step() + 1);
      state.exp_avg().mul_(beta1).add_(grad, 1.0 - beta1);
      state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
      at::Tensor denom = state.exp_avg_sq().sqrt().add_(options.eps());
      double step_size = options.lr();
      if (options.correct_bias()) {
        const double t = static_cast<double>(state.step());
        const double bias_correction1 = 1.0 - std::pow(beta1, t);
        const double bias_correction2 = 1.0 - std::pow(beta2, t);
        step_size = step_size * std::sqrt(bias_correction2) / bias_correction1;
      }
      p.addcdiv_(state.exp_avg(), denom, -step_size);
      // Decoupled decay after the Adam update, only for a positive rate (HF's order).
      if (options.weight_decay() > 0.0) p.add_(p, -options.lr() * options.weight_decay());
    }
  }
  return loss;
}

}  // namespace loom::optim
