// Fused CPU optimizers (for ZeRO-Offload): torch's AdamW, Adam and Adagrad, and HF's AdamW —
// DeepSpeedCPUAdam and DeepSpeedCPUAdagrad semantics — stepping each parameter in one vectorised
// pass (cpu_optim_kernels.h) instead of torch's eight. The optimizer step is the host-side
// bottleneck of offloaded training (ZeRO-Offload), and `--optim adamw_torch_fused` uses the
// AdamW on its own — on a GPU too, where FusedCpuAdamW steps the CUDA parameters with ATen's
// fused AdamW kernel, as torch.optim.AdamW(fused=True) does.
//
// Contract: each class IS the torch optimizer it names (same options, same per-parameter state
// AdamWParamState / AdamParamState / AdagradParamState, so checkpoints, HF's optimizer.pt and
// the sharding strategies treat it as that optimizer) and gives its results to float rounding.
// Extras (FusedCpuExtras):
//   - isa: the vector path (default: the widest this CPU runs; tests pick each);
//   - bias_correction (Adam/AdamW; DeepSpeed's flag): false uses 1 for both corrections;
//   - SetHalfCopy(param, copy): after each step, `copy` (bf16 or fp16, same numel) holds the
//     updated parameter rounded to its dtype, written in the same pass (DeepSpeed's
//     step with fp16 params);
//   - cpu_through_aten_fused (AdamW; for tests, default false): CPU parameters take the CUDA
//     parameters' path below (torch's CPU kernel of at::_fused_adamw_) instead of loom's
//     one-pass kernel, so that path is tested without a GPU. Setting it true where
//     !kHasAtenFusedAdamW is a c10::Error.
// FusedCpuAdamW on CUDA (kHasAtenFusedAdamW builds): parameters that are contiguous CUDA float32
// / bf16 / fp16 / float64 tensors with a dense contiguous gradient of their dtype and shape
// (amsgrad too) are stepped as torch 2.x's torch/optim/adam.py `_fused_adam` (AdamW's
// decoupled_weight_decay) steps them: per param group, grouped by (device, dtype) in order of
// first appearance, ONE at::_fused_adamw_ call per group, with the group's lr, betas, eps,
// weight_decay and amsgrad (maximize false: LibTorch's AdamWOptions has none; no grad_scale or
// found_inf). The state stays AdamWParamState with its int64 step (incremented before the
// call); the kernel gets the steps as float32 tensors on the device, like torch's fused state,
// built from it in one pinned, non-blocking host-to-device copy per group. bias_correction false
// and half copies do not exist on that path: a c10::Error (never a silent difference).
// Any other parameter that is not a contiguous CPU float32 tensor with a dense gradient of its
// shape, or a CPU one with amsgrad, makes the whole call take the torch optimizer's own step;
// that path has no bias_correction false and no half copies, so those are a c10::Error there.
//
// Example:
//   optim::FusedCpuAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
//   loss.backward();
//   opt.step();
#ifndef LOOM_OPTIM_FUSED_CPU_OPTIM_H_
#define LOOM_OPTIM_FUSED_CPU_OPTIM_H_

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/torch_compat.h"
#include "optim/cpu_optim_kernels.h"
#include "optim/hf_adamw.h"

namespace loom::optim {

// Whether this LibTorch has at::_fused_adamw_ with both its CUDA and its CPU kernel (torch 2.4
// added the CPU one; Debian's LibTorch 1.13 has neither).
inline constexpr bool kHasAtenFusedAdamW = LOOM_TORCH_AT_LEAST(2, 4);

class FusedCpuExtras {
 public:
  CpuIsa isa() const { return isa_; }
  void set_isa(CpuIsa v) { isa_ = v; }
  bool bias_correction() const { return bias_correction_; }
  void set_bias_correction(bool v) { bias_correction_ = v; }
  // `copy`: a contiguous CPU bf16 or fp16 tensor with param's numel (c10::Error otherwise).
  void SetHalfCopy(const at::Tensor& param, at::Tensor copy);
  void ClearHalfCopies() { half_copies_.clear(); }
  bool cpu_through_aten_fused() const { return cpu_through_aten_fused_; }
  void set_cpu_through_aten_fused(bool v);

 protected:
  HalfCopy HalfCopyOf(const at::Tensor& param) const;
  std::function<HalfCopy(const at::Tensor&)> HalfCopies() const;  // HalfCopyOf as a function
  // Refuses (c10::Error) the extras on the torch fallback path.
  void CheckFallbackAllowed(const char* optimizer) const;
  // Refuses (c10::Error) the extras for a parameter on the at::_fused_adamw_ path.
  void CheckAtenFusedAllowed(const at::Tensor& param) const;

 private:
  CpuIsa isa_ = DetectCpuIsa();
  bool bias_correction_ = true;
  bool cpu_through_aten_fused_ = false;
  std::unordered_map<const c10::TensorImpl*, at::Tensor> half_copies_;
};

class FusedCpuAdamW : public torch::optim::AdamW, public FusedCpuExtras {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// Adam with L2 weight decay (DeepSpeedCPUAdam with adamw_mode false).
class FusedCpuAdam : public torch::optim::Adam, public FusedCpuExtras {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// transformers.AdamW (`--optim adamw_hf`'s arithmetic, hf_adamw.h) in one pass; its own
// correct_bias option (the extras' bias_correction is not used).
class FusedCpuHfAdamW : public HfAdamW, public FusedCpuExtras {
 public:
  using HfAdamW::HfAdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

class FusedCpuAdagrad : public torch::optim::Adagrad, public FusedCpuExtras {
 public:
  using torch::optim::Adagrad::Adagrad;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace loom::optim

#endif  // LOOM_OPTIM_FUSED_CPU_OPTIM_H_
