// torch.nn.utils.clip_grad_norm_ (torch 1.13) with norm_type 2 and
// error_if_nonfinite = false, as HF's Trainer calls it when max_grad_norm > 0
// (transformers 4.38 `Trainer._inner_training_loop`, via accelerate 0.27
// `Accelerator.clip_grad_norm_`).
//
// Contract: parameters whose grad() is undefined are skipped; with none left the result is
// 0 and nothing changes. Otherwise
//   total = || [ ||g_1||_2, ..., ||g_n||_2 ] ||_2   (per-tensor norms moved to the first
//                                                     gradient's device, then stacked)
//   coef  = min(1, max_norm / (total + 1e-6))       (computed as a tensor, like Python:
//                                                     (total + 1e-6).reciprocal() * max_norm)
// and every gradient is multiplied in place by coef — ALWAYS, even when coef is 1, so the
// arithmetic matches Python's bit for bit. Returns the pre-clip total norm (the float32 value
// as a double when the gradients are float32). Non-finite norms propagate (no error).
//
// Example:
//   const double grad_norm = ClipGradNorm(model->parameters(), args.max_grad_norm());
#ifndef LOOM_OPTIM_CLIP_GRAD_H_
#define LOOM_OPTIM_CLIP_GRAD_H_

#include <ATen/ATen.h>

#include <vector>

namespace loom::optim {

double ClipGradNorm(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_CLIP_GRAD_H_
