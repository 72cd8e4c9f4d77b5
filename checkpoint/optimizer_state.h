// optimizer.pt: a LibTorch optimizer's state in the layout of Python's
// optimizer.state_dict() (torch 1.13; what HF's Trainer saves and loads), so that Python's
// torch.load + optimizer.load_state_dict resumes a loom run and loom resumes its own files.
//
// Layout:
//   {"state": {index: {name: value, ...}, ...},
//    "param_groups": [{<hyperparameters in Python's order>, "params": [index, ...]}, ...]}
// Parameters are numbered 0, 1, ... across groups in group order (Python's packing); only
// parameters with state appear under "state", in index order. Per optimizer:
//   torch::optim::AdamW   state step (0-dim float32 tensor, as torch >= 1.12), exp_avg,
//                         exp_avg_sq, max_exp_avg_sq (amsgrad); groups lr, betas, eps,
//                         weight_decay, amsgrad, foreach=None, maximize=False, capturable=False
//   torch::optim::Adam    the same state; groups as AdamW plus differentiable=False, fused=False
//   torch::optim::SGD     state momentum_buffer (momentum != 0); groups lr, momentum, dampening,
//                         weight_decay, nesterov, maximize, foreach, differentiable
//   torch::optim::Adagrad state step (float32 tensor), sum; groups lr, lr_decay, eps,
//                         weight_decay, initial_accumulator_value, foreach, maximize
//   torch::optim::RMSprop state step (int), square_avg, momentum_buffer, grad_avg; groups lr,
//                         momentum, alpha, eps, centered, weight_decay, foreach, maximize,
//                         differentiable
//   loom HfAdamW          (transformers.AdamW) state step (int), exp_avg, exp_avg_sq; groups
//                         lr, betas, eps, weight_decay, correct_bias
//   loom Adafactor        (transformers.Adafactor) state step (int), exp_avg, exp_avg_sq_row,
//                         exp_avg_sq_col or exp_avg_sq, RMS; groups lr (None allowed), eps,
//                         clip_threshold, decay_rate, beta1 (None allowed), weight_decay,
//                         scale_parameter, relative_step, warmup_init
// (Each is one table in optimizer_state_layouts.cc, read by one encoder and one decoder.)
// State tensors are written as CPU tensors (portable; Python's load_state_dict moves them to
// each parameter's device) and read back onto the parameter's device, floating-point ones cast
// to its dtype (Python's rule; "step" is never cast).
//
// Loading follows Optimizer.load_state_dict: the number of groups and of parameters per group
// must match ("loaded state dict has a different number of parameter groups" / "loaded state
// dict contains a parameter group that doesn't match the size of optimizer's group", torch's
// wording); every hyperparameter comes from the file; the state is replaced wholesale
// (parameters absent from "state" start fresh). Everything is validated before anything
// changes. Errors (InvalidArgument) name the group or parameter index and the key. Keys loom
// has no use for (foreach, capturable, differentiable, fused, initial_lr, which a Python
// scheduler adds) are ignored; maximize=True and unknown state keys are errors (LibTorch's
// optimizers cannot honour them). A state tensor whose shape differs from its parameter's is
// an error (Python would fail later, inside step()).
//
// Example:
//   RETURN_IF_ERROR(SaveOptimizerState(dir + "/optimizer.pt", *optimizer));
//   RETURN_IF_ERROR(LoadOptimizerState(dir + "/optimizer.pt", *optimizer));
#ifndef LOOM_CHECKPOINT_OPTIMIZER_STATE_H_
#define LOOM_CHECKPOINT_OPTIMIZER_STATE_H_

#include <ATen/core/ivalue.h>
#include <torch/optim/optimizer.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::checkpoint {

// InvalidArgument for an optimizer type this file does not know (the message lists the known).
absl::StatusOr<c10::IValue> OptimizerStateDict(const torch::optim::Optimizer& optimizer);
absl::Status LoadOptimizerStateDict(torch::optim::Optimizer& optimizer,
                                    const c10::IValue& state_dict);

// The same through a torch pickle file (torch_pickle.h); errors name the file.
absl::Status SaveOptimizerState(const std::string& path, const torch::optim::Optimizer& optimizer);
absl::Status LoadOptimizerState(const std::string& path, torch::optim::Optimizer& optimizer);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_OPTIMIZER_STATE_H_
