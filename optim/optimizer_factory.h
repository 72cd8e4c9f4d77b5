// HF Trainer.create_optimizer + Trainer.get_optimizer_cls_and_kwargs (transformers
// 4.38–4.41) for the `--optim` names that exist in C++ (TrainingArguments `optim`,
// `optim_args`, `adam_*`, `weight_decay`: AdamW by default, no decay on biases and LayerNorm
// weights, unknown `optim` names refused).
//
// Contract: CreateOptimizer(args, model) builds the two HF parameter groups
// (HfParamGroups: decay group with args.weight_decay, then the no-decay group with 0.0;
// requires_grad=false parameters left out) and the optimizer HF would construct with
// lr = args.learning_rate as the default (optimizer.defaults().get_lr()):
//   adamw_torch        TorchAdamW (torch.optim.AdamW's arithmetic; betas=(adam_beta1, adam_beta2),
//                      eps=adam_epsilon)
//   adamw_torch_fused  loom::optim::FusedCpuAdamW (fused_cpu_optim.h; see deviations)
//   adamw_hf           loom::optim::HfAdamW (transformers.AdamW) with the same kwargs
//   adafactor          loom::optim::Adafactor(scale_parameter=false, relative_step=false)
//   sgd                torch::optim::SGD(lr) (momentum 0, as HF passes only lr)
//   adagrad            torch::optim::Adagrad(lr)
//   rmsprop            torch::optim::RMSprop(lr)
// LibTorch 1.13's C++ AdamW, SGD, Adagrad and RMSprop perform the same tensor operations as
// Python torch 1.13's single-tensor implementations for these kwargs (checked against Python
// in tests/optim), so they are used as they are.
// Errors (InvalidArgument, naming the flag): any other --optim (the message lists the
// supported names); a malformed --optim_args ("k=v,k=v", spaces ignored, each entry exactly
// one '='); where the Python constructor raises: --learning_rate < 0 (not for adafactor),
// and for the Adam variants --adam_epsilon < 0 or --adam_beta1/2 outside [0, 1). As in Python,
// the groups' weight decay is not checked.
// HF passes optim_args to none of these optimizers; a well-formed non-empty --optim_args is
// therefore ignored with a warning. Warnings are appended to `warnings`, or logged (glog
// WARNING) when it is null.
//
// adamw_hf also warns, as transformers.AdamW's constructor does, that HF deprecated it.
//
// Deviations: adamw_torch_fused needs PyTorch >= 2.0 in HF, which builds
// torch.optim.AdamW(fused=True). loom's keeps torch's AdamW state (AdamWParamState, int64 step)
// and steps CPU float32 parameters with its own one-pass kernel (equal up to float rounding);
// CUDA parameters with one at::_fused_adamw_ call per param group and (device, dtype), as torch
// 2.x's fused AdamW does (LibTorch >= 2.4; against 1.13 they take torch's AdamW step), and any
// parameter neither path takes makes the step torch's AdamW step.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> optimizer,
//                    CreateOptimizer(args, *model));
#ifndef LOOM_OPTIM_OPTIMIZER_FACTORY_H_
#define LOOM_OPTIM_OPTIMIZER_FACTORY_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "args/training_args.pb.h"

namespace loom::optim {

// The --optim values CreateOptimizer accepts, in the order error messages list them.
const std::vector<std::string>& SupportedOptimizerNames();

// HF's parsing of --optim_args: spaces removed, split on ',', each entry split on '='.
// Empty text gives an empty map.
absl::StatusOr<std::map<std::string, std::string>> ParseOptimArgs(absl::string_view text);

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateOptimizer(
    const args::TrainingArguments& args, torch::nn::Module& model,
    std::vector<std::string>* warnings = nullptr);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_OPTIMIZER_FACTORY_H_
