#include "optim/adafactor.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "optim/param_state.h"

namespace loom::optim {
namespace {

// ||x||_2 / sqrt(numel), as a 0-dim tensor (Python: x.norm(2) / x.numel() ** 0.5).
at::Tensor Rms(const at::Tensor& x) {
  std::vector<int64_t> all_dims(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) all_dims[d] = d;
  return at::norm(x, 2, all_dims, /*keepdim=*/false)
      .div(std::pow(static_cast<double>(x.numel()), 0.5));
}

bool IsHalf(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

}  // namespace

double AdafactorOptions::get_lr() const {
  TORCH_CHECK(lr().has_value(), "this Adafactor has no external learning rate (relative_step)");
  return *lr();
}

Adafactor::Adafactor(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                     AdafactorOptions defaults)
    : torch::optim::Optimizer(std::move(param_groups),
                              std::make_unique<AdafactorOptions>(defaults)) {
  // The checks of transformers.Adafactor.__init__.
  TORCH_CHECK(!(defaults.lr().has_value() && defaults.relative_step()),
              "Cannot combine manual `lr` and `relative_step=True` options");
  TORCH_CHECK(!(defaults.warmup_init() && !defaults.relative_step()),
              "`warmup_init=True` requires `relative_step=True`");
}

double Adafactor::StepLr(const AdafactorOptions& group, const AdafactorParamState& state) {
  double relative_step_size = group.lr().value_or(0.0);
  if (group.relative_step()) {
    const double t = static_cast<double>(state.step());
    const double min_step = group.warmup_init() ? 1e-6 * t : 1e-2;
    relative_step_size = std::min(min_step, 1.0 / std::sqrt(t));
  } else {
    TORCH_CHECK(group.lr().has_value(), "Adafactor without relative_step needs an lr");
  }
  double param_scale = 1.0;
  if (group.scale_parameter()) {
    const double rms = state.rms().defined() ? state.rms().item<double>() : 0.0;
    param_scale = std::max(std::get<1>(group.eps()), rms);
  }
  return param_scale * relative_step_size;
}

at::Tensor Adafactor::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  at::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const AdafactorOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = p.grad();
      if (IsHalf(grad)) grad = grad.to(at::kFloat);
      TORCH_CHECK(!grad.is_sparse(), "Adafactor does not support sparse gradients.");
      const bool factored = grad.dim() >= 2;
      const bool use_first_moment = options.beta1().has_value();

      auto& state = StateOf<AdafactorParamState>(state_, p, [&] {
        auto fresh = std::make_unique<AdafactorParamState>();
        if (use_first_moment) fresh->exp_avg(at::zeros_like(grad));
        if (factored) {
          const auto shape = grad.sizes();
          std::vector<int64_t> col_shape(shape.begin(), shape.end() - 2);
          col_shape.push_back(shape.back());
          fresh->exp_avg_sq_row(at::zeros(shape.slice(0, shape.size() - 1), grad.options()));
          fresh->exp_avg_sq_col(at::zeros(col_shape, grad.options()));
        } else {
          fresh->exp_avg_sq(at::zeros_like(grad));
        }
        return fresh;
      });
      // Python moves existing state to the gradient's dtype/device each step.
      for (at::Tensor* t : {&state.exp_avg(), &state.exp_avg_sq_row(), &state.exp_avg_sq_col(),
                            &state.exp_avg_sq()}) {
        if (t->defined()) *t = t->to(grad);
      }

      at::Tensor p_fp32 = IsHalf(p) ? p.to(at::kFloat) : p;
      state.step(state.step() + 1);
      state.rms(Rms(p_fp32));
      const double lr = StepLr(options, state);

      const double beta2t = 1.0 - std::pow(static_cast<double>(state.step()), options.decay_rate());
      at::Tensor update = grad.pow(2) + std::get<0>(options.eps());
      if (factored) {
        at::Tensor& row = state.exp_avg_sq_row();
        at::Tensor& col = state.exp_avg_sq_col();
        row.mul_(beta2t).add_(update.mean(-1), 1.0 - beta2t);
        col.mul_(beta2t).add_(update.mean(-2), 1.0 - beta2t);
        at::Tensor r_factor = (row / row.mean(-1, /*keepdim=*/true)).rsqrt_().unsqueeze(-1);
        at::Tensor c_factor = col.unsqueeze(-2).rsqrt();
        update = at::mul(r_factor, c_factor);
        update.mul_(grad);
      } else {
        at::Tensor& v = state.exp_avg_sq();
        v.mul_(beta2t).add_(update, 1.0 - beta2t);
        update = v.rsqrt().mul_(grad);
      }
      update.div_((Rms(update) / options.clip_threshold()).clamp_(1.0));
      update.mul_(lr);
      if (use_first_moment) {
        at::Tensor& m = state.exp_avg();
        m.mul_(*options.beta1()).add_(update, 1.0 - *options.beta1());
        update = m;
      }
      if (options.weight_decay() != 0.0) p_fp32.add_(p_fp32, -options.weight_decay() * lr);
      p_fp32.add_(-update);
      if (IsHalf(p)) p.copy_(p_fp32);
    }
  }
  return loss;
}

}  // namespace loom::optim
