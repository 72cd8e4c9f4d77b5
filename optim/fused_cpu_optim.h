// Fused CPU optimizers (for ZeRO-Offload): torch's AdamW, Adam and Adagrad, and HF's AdamW —
// DeepSpeedCPUAdam and DeepSpeedCPUAdagrad semantics — stepping each parameter in one vectorised
// pass (cpu_optim_kernels.h) instead of torch's eight. The optimizer step is the host-side
// bottleneck of offloaded training (ZeRO-Offload), and `--optim adamw_torch_fused` uses the
// AdamW on its own.
//
// Contract: each class IS the torch optimizer it names (same options, same per-parameter state
// AdamWParamState / AdamParamState / AdagradParamState, so checkpoints, HF's optimizer.pt and
// the sharding strategies treat it as that optimizer) and gives its results to float rounding.
// Extras (FusedCpuExtras):
//   - isa: the vector path (default: the widest this CPU runs; tests pick each);
//   - bias_correction (Adam/AdamW; DeepSpeed's flag): false uses 1 for both corrections;
//   - SetHalfCopy(param, copy): after each step, `copy` (bf16 or fp16, same numel) holds the
//     updated parameter rounded to its dtype, written in the same pass (DeepSpeed's
//     step with fp16 params).
// A parameter that is not a contiguous CPU float32 tensor with a dense gradient of its shape, or
// amsgrad, takes the torch optimizer's own step for that call; that path has no bias_correction
// false and no half copies, so those are a c10::Error there (never a silent difference).
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

#include "optim/cpu_optim_kernels.h"
#include "optim/hf_adamw.h"

namespace loom::optim {

class FusedCpuExtras {
 public:
  CpuIsa isa() const { return isa_; }
  void set_isa(CpuIsa v) { isa_ = v; }
  bool bias_correction() const { return bias_correction_; }
  void set_bias_correction(bool v) { bias_correction_ = v; }
  // `copy`: a contiguous CPU bf16 or fp16 tensor with param's numel (c10::Error otherwise).
  void SetHalfCopy(const at::Tensor& param, at::Tensor copy);
  void ClearHalfCopies() { half_copies_.clear(); }

 protected:
  HalfCopy HalfCopyOf(const at::Tensor& param) const;
  std::function<HalfCopy(const at::Tensor&)> HalfCopies() const;  // HalfCopyOf as a function
  // Refuses (c10::Error) the extras on the torch fallback path.
  void CheckFallbackAllowed(const char* optimizer) const;

 private:
  CpuIsa isa_ = DetectCpuIsa();
  bool bias_correction_ = true;
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
