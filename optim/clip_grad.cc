#include "optim/clip_grad.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cstdint>
#include <vector>

#include "base/torch_compat.h"

namespace loom::optim {
namespace {

// The 2-norm clip_grad_norm_ takes of each gradient and of the stacked norms, in the Python
// torch of this LibTorch: torch 2.x's torch._foreach_norm (on the CPU, linalg.vector_norm of
// each tensor) and linalg.vector_norm; torch 1.13's torch.norm(t, 2.0), i.e. _VF.norm over
// every dimension. The two reduce in different orders.
at::Tensor Norm2(const at::Tensor& t) {
  if (LOOM_TORCH_AT_LEAST(2, 0)) return at::linalg_vector_norm(t, 2.0);
  std::vector<int64_t> dims(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) dims[d] = d;
  return at::norm(t, 2.0, dims, /*keepdim=*/false);
}

}  // namespace

double ClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;
  const at::Device device = grads.front().device();
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  for (const at::Tensor& g : grads) norms.push_back(Norm2(g.detach()).to(device));
  const at::Tensor total = Norm2(at::stack(norms));
  // Python's `max_norm / (total + 1e-6)` is Tensor.__rtruediv__: reciprocal() * max_norm.
  const at::Tensor coef = (total + 1e-6).reciprocal() * max_norm;
  const at::Tensor coef_clamped = at::clamp(coef, /*min=*/c10::optional<at::Scalar>(),
                                            /*max=*/c10::optional<at::Scalar>(1.0));
  for (at::Tensor& g : grads) g.detach().mul_(coef_clamped.to(g.device()));
  return total.item<double>();
}

}  // namespace loom::optim
