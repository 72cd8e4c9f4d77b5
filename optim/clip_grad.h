// torch.nn.utils.clip_grad_norm_ with norm_type 2 and error_if_nonfinite = false, as HF's
// Trainer calls it when max_grad_norm > 0 (transformers 4.38 `Trainer._inner_training_loop`,
// via accelerate 0.27 `Accelerator.clip_grad_norm_`), in the arithmetic of the Python torch of
// this LibTorch (1.13 or 2.x).
//
// Contract: parameters whose grad() is undefined are skipped; with none left the result is
// 0 and nothing changes. Otherwise
//   total = || [ ||g_1||_2, ..., ||g_n||_2 ] ||_2   (per-tensor norms moved to the first
//                                                     gradient's device, then stacked)
//   coef  = min(1, max_norm / (total + 1e-6))       (computed as a tensor, like Python:
//                                                     (total + 1e-6).reciprocal() * max_norm)
// and every gradient is multiplied in place by coef — ALWAYS, even when coef is 1, so the
// arithmetic matches Python's bit for bit. Returns the pre-clip total norm (the float32 value
// as a double when the gradients are float32; one device-to-host read). Non-finite norms
// propagate (no error).
// How: when any gradient is on CUDA (LibTorch >= 2.1), as torch 2.x's torch/nn/utils/
// clip_grad.py does with foreach=None: gradients grouped by (device, dtype) (groups in order of
// first appearance; Python's order is its hash map's), one torch._foreach_norm(group, 2.0) per
// group, linalg.vector_norm of the stacked norms, one torch._foreach_mul_(group, coef) per group
// — a few kernels however many gradients. Otherwise (CPU gradients, or LibTorch 1.13) one norm
// and one mul_ per gradient in their order, today's arithmetic to the bit (torch 2.x's CPU
// _foreach_norm and _foreach_mul_ are those per-tensor ops, so one dtype's gradients give the
// same bits either way).
//
// Example:
//   const double grad_norm = ClipGradNorm(model->parameters(), args.max_grad_norm());
#ifndef LOOM_OPTIM_CLIP_GRAD_H_
#define LOOM_OPTIM_CLIP_GRAD_H_

#include <ATen/ATen.h>

#include <vector>

namespace loom::optim {

double ClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm);

namespace internal {

// The CUDA path above run whatever the gradients' devices (for tests without a GPU).
// LibTorch < 2.1: a c10::Error.
double ForeachClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace internal

}  // namespace loom::optim

#endif  // LOOM_OPTIM_CLIP_GRAD_H_
