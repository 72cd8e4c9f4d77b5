#include "optim/fused_cpu_adamw.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <string>

namespace loom::optim {
namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void Kernel(
    float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
    float* __restrict__ v, int64_t n, float decay, float beta1, float one_minus_beta1, float beta2,
    float one_minus_beta2, float bc2_sqrt, float eps, float neg_step_size) {
  // torch's AdamW, element by element: p *= 1 - lr * wd; m = m * b1 + (1 - b1) g;
  // v = v * b2 + (1 - b2) g^2; p += -step_size * m / (sqrt(v) / sqrt(bc2) + eps).
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] * beta1 + gi * one_minus_beta1;
    const float vi = v[i] * beta2 + gi * gi * one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = p[i] * decay + neg_step_size * (mi / denom);
  }
}

bool Fusable(const torch::Tensor& p, const torch::optim::AdamWOptions& o) {
  const torch::Tensor& g = p.grad();
  return !o.amsgrad() && p.device().is_cpu() && p.scalar_type() == at::kFloat &&
         p.is_contiguous() && g.device().is_cpu() && g.scalar_type() == at::kFloat &&
         !g.is_sparse() && g.is_contiguous() && g.sizes() == p.sizes();
}

}  // namespace

void FusedAdamWUpdate(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                      double lr, double beta1, double beta2, double eps, double weight_decay,
                      double bias_correction1, double bias_correction2) {
  // The scalars as torch forms them: in double, then rounded to the tensors' float once.
  const float decay = static_cast<float>(weight_decay != 0 ? 1 - lr * weight_decay : 1.0);
  const float neg_step_size = static_cast<float>(-(lr / bias_correction1));
  const float bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float b1 = static_cast<float>(beta1), one_minus_b1 = static_cast<float>(1 - beta1);
  const float b2 = static_cast<float>(beta2), one_minus_b2 = static_cast<float>(1 - beta2);
  const float e = static_cast<float>(eps);
  at::parallel_for(0, n, /*grain_size=*/32768, [&](int64_t begin, int64_t end) {
    Kernel(param + begin, grad + begin, exp_avg + begin, exp_avg_sq + begin, end - begin, decay, b1,
           one_minus_b1, b2, one_minus_b2, bc2_sqrt, e, neg_step_size);
  });
}

torch::Tensor FusedCpuAdamW::step(LossClosure closure) {
  // Any parameter the fused pass cannot take: torch's AdamW for this step.
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (p.grad().defined() && !Fusable(p, options)) return torch::optim::AdamW::step(closure);
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(state)).first;
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*it->second);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      FusedAdamWUpdate(p.data_ptr<float>(), p.grad().data_ptr<float>(),
                       state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(),
                       p.numel(), options.lr(), beta1, beta2, options.eps(), options.weight_decay(),
                       bias_correction1, bias_correction2);
    }
  }
  return loss;
}

}  // namespace loom::optim
