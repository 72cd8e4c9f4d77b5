// The optimizer and scheduler sections of a DeepSpeed config (DeepSpeed 0.13.5 `optimizer` /
// `scheduler` config sections), built as DeepSpeed 0.13.5's engine builds them, for the
// Trainer under --deepspeed (HF's DummyOptim / DummyScheduler path: transformers 4.38
// `integrations/deepspeed.py` `deepspeed_optim_sched`).
//
// Optimizer (CheckDeepSpeedOptimizer validates, CreateDeepSpeedOptimizer builds): one
// parameter group holding every parameter that requires grad, in model order — HF passes
// DeepSpeed `model_parameters`, so weight decay applies to biases and LayerNorm weights too —
// with the section's params:
//   Adam / AdamW   lr, betas, eps, weight_decay (DeepSpeed's Adam defaults), torch_adam,
//                  adam_w_mode (default true: "Adam" means AdamW unless adam_w_mode is false,
//                  as DeepSpeed), bias_correction (false only with the CPU Adam below),
//                  amsgrad (false only).
//                  Decoupled decay -> torch AdamW arithmetic; adam_w_mode false -> torch Adam
//                  (L2). DeepSpeed's FusedAdam computes the same update up to float rounding.
//   Adagrad        lr (1e-2), eps (1e-10), weight_decay (0), lr_decay (0),
//                  initial_accumulator_value (0): torch.optim.Adagrad, as DeepSpeed on GPU.
//   With zero_optimization.offload_optimizer on cpu or nvme, as DeepSpeed's engine: Adam/AdamW
//   are loom's fused CPU Adam (fused_cpu_optim.h: FusedCpuAdamW, or FusedCpuAdam without
//   adam_w_mode; DeepSpeedCPUAdam's role) unless torch_adam is true, and Adagrad is
//   FusedCpuAdagrad (DeepSpeedCPUAdagrad's).
//   SGD            lr (required), momentum, dampening, weight_decay, nesterov: torch.optim.SGD
//                  (DeepSpeed takes other names from torch.optim).
// DeepSpeed's own names match in any case ("adamw"), as DeepSpeed lower-cases them.
// Errors (InvalidArgument naming `optimizer.type` / `optimizer.params.<key>` and the fix):
// another type (Lamb, OneBitAdam, ZeroOneAdam, OneBitLamb, Lion: not in loom; the 1-bit ones are
// also DeepSpeed's "not compatible with ZeRO"); a param the type does not take; max_grad_norm
// (DeepSpeed's own message); with ZeRO (stage >= 1) an optimizer DeepSpeed has not tested
// (SGD) without zero_allow_untested_optimizer (DeepSpeed's message).
//
// Scheduler (CheckDeepSpeedScheduler, CreateDeepSpeedScheduler): WarmupLR, WarmupDecayLR,
// WarmupCosineLR and LRRangeTest with the formulas of DeepSpeed 0.13.5
// `deepspeed/runtime/lr_schedules.py`. As in DeepSpeed, the
// schedule does not touch the optimizer until its first Step() (LRRangeTest sets its min lr at
// construction), so the first optimizer step runs at the optimizer's own lr; Step() follows
// each applied optimizer step. LastLr() before the first Step() is 0 (HF logs lr=0 then).
// StateDict() = {'last_batch_iteration': n}. OneCycle is refused (not implemented yet), as is
// any other type, naming `scheduler.type`; WarmupDecayLR / WarmupCosineLR need
// total_num_steps.
//
// Example:
//   RETURN_IF_ERROR(CheckDeepSpeedOptimizer(ds, /*zero_stage=*/2));
//   ASSIGN_OR_RETURN(auto optimizer, CreateDeepSpeedOptimizer(ds, *model));
//   ASSIGN_OR_RETURN(auto scheduler, CreateDeepSpeedScheduler(ds, optimizer.get()));
#ifndef LOOM_OPTIM_DEEPSPEED_OPTIM_H_
#define LOOM_OPTIM_DEEPSPEED_OPTIM_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/deepspeed_config.h"
#include "optim/lr_scheduler.h"

namespace loom::optim {

// Checks the `optimizer` section (OK when there is none).
absl::Status CheckDeepSpeedOptimizer(const args::DeepSpeedConfig& ds, int zero_stage);
// Precondition: ds.optimizer is set and CheckDeepSpeedOptimizer passed.
absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateDeepSpeedOptimizer(
    const args::DeepSpeedConfig& ds, torch::nn::Module& model);

// Checks the `scheduler` section (OK when there is none); "auto" values must be resolved.
absl::Status CheckDeepSpeedScheduler(const args::DeepSpeedConfig& ds);
// Precondition: ds.scheduler is set and CheckDeepSpeedScheduler passed.
absl::StatusOr<std::unique_ptr<LrScheduler>> CreateDeepSpeedScheduler(
    const args::DeepSpeedConfig& ds, torch::optim::Optimizer* optimizer);

// A DeepSpeed schedule: lr of group g after `last_batch_iteration` steps.
class DeepSpeedScheduler : public LrScheduler {
 public:
  using LrFn = std::function<double(size_t group, int64_t last_batch_iteration)>;
  // `initial_lrs`: set on the groups at construction (LRRangeTest), none when empty.
  DeepSpeedScheduler(torch::optim::Optimizer* optimizer, LrFn lr,
                     std::vector<double> initial_lrs = {});

  void Step() override;
  std::vector<double> LastLr() const override;
  int64_t last_epoch() const override { return last_batch_iteration_ + 1; }
  c10::IValue StateDict() const override;
  absl::Status LoadStateDict(const c10::IValue& state) override;
  int64_t last_batch_iteration() const { return last_batch_iteration_; }

 private:
  torch::optim::Optimizer* optimizer_;
  LrFn lr_;
  int64_t last_batch_iteration_ = -1;
  std::vector<double> last_lr_;  // empty before the first Step()
};

}  // namespace loom::optim

#endif  // LOOM_OPTIM_DEEPSPEED_OPTIM_H_
