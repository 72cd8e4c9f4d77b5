#include "optim/clip_grad.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
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

// min(1, max_norm / (total + 1e-6)) as a tensor. Python's `max_norm / (total + 1e-6)` is
// Tensor.__rtruediv__: reciprocal() * max_norm.
at::Tensor ClipCoefficient(const at::Tensor& total, double max_norm) {
  const at::Tensor coef = (total + 1e-6).reciprocal() * max_norm;
  return at::clamp(coef, /*min=*/c10::optional<at::Scalar>(),
                   /*max=*/c10::optional<at::Scalar>(1.0));
}

// One norm and one mul_ per gradient, in the gradients' order (the CPU's arithmetic, bit for
// bit what Python's torch does there).
double PerTensorClip(const std::vector<at::Tensor>& grads, double max_norm) {
  const at::Device device = grads.front().device();
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  for (const at::Tensor& g : grads) norms.push_back(Norm2(g.detach()).to(device));
  const at::Tensor total = Norm2(at::stack(norms));
  const at::Tensor coef_clamped = ClipCoefficient(total, max_norm);
  for (const at::Tensor& g : grads) g.detach().mul_(coef_clamped.to(g.device()));
  return total.item<double>();
}

#if LOOM_TORCH_AT_LEAST(2, 1)
// torch 2.x's _group_tensors_by_device_and_dtype, groups in order of first appearance.
std::vector<std::vector<at::Tensor>> ByDeviceAndDtype(const std::vector<at::Tensor>& grads) {
  std::vector<std::vector<at::Tensor>> groups;
  for (const at::Tensor& g : grads) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const std::vector<at::Tensor>& b) {
      return b.front().device() == g.device() && b.front().scalar_type() == g.scalar_type();
    });
    if (it == groups.end()) {
      groups.emplace_back();
      it = std::prev(groups.end());
    }
    it->push_back(g);
  }
  return groups;
}

// torch 2.x's torch/nn/utils/clip_grad.py with foreach=None: _get_total_norm
// (torch._foreach_norm per (device, dtype) group, the norms moved to the first gradient's
// device, stacked, linalg.vector_norm) and _clip_grads_with_norm_ (torch._foreach_mul_ of each
// group by the clamped coefficient on its device). On CUDA: a few kernels for all gradients.
double ForeachClip(const std::vector<at::Tensor>& grads, double max_norm) {
  const at::Device first_device = grads.front().device();
  const std::vector<std::vector<at::Tensor>> groups = ByDeviceAndDtype(grads);
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  for (const auto& group : groups) {
    for (const at::Tensor& n : at::_foreach_norm(group, 2.0)) norms.push_back(n.to(first_device));
  }
  const at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2.0);
  const at::Tensor coef_clamped = ClipCoefficient(total, max_norm);
  for (const auto& group : groups) {
    at::_foreach_mul_(group, coef_clamped.to(group.front().device()));
  }
  return total.item<double>();
}
#endif

std::vector<at::Tensor> GradsOf(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

}  // namespace

double ClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> grads = GradsOf(parameters);
  if (grads.empty()) return 0.0;
#if LOOM_TORCH_AT_LEAST(2, 1)
  if (std::any_of(grads.begin(), grads.end(), [](const at::Tensor& g) { return g.is_cuda(); })) {
    return ForeachClip(grads, max_norm);
  }
#endif
  return PerTensorClip(grads, max_norm);
}

namespace internal {

double ForeachClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm) {
#if LOOM_TORCH_AT_LEAST(2, 1)
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> grads = GradsOf(parameters);
  return grads.empty() ? 0.0 : ForeachClip(grads, max_norm);
#else
  TORCH_CHECK(false, "ForeachClipGradNorm: LibTorch ", base::kLibTorchVersion,
              " has no at::_foreach_mul_ by a tensor (torch >= 2.1)");
#endif
}

}  // namespace internal
}  // namespace loom::optim
