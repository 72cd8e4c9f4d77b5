// Activation checkpointing for C++ modules: torch.utils.checkpoint's recompute-in-backward
// (torch 1.13), usable by any model.
//
// Contract:
//   - Checkpoint(fn, inputs, params, options) returns fn(inputs). When grad mode is on and any
//     input or parameter requires grad, fn first runs under no_grad (its activations are not
//     kept); in backward it runs again with grad on and the gradients of the inputs and
//     `params` (the parameters fn uses) flow back exactly as without checkpointing.
//     Otherwise it is just fn(inputs).
//   - preserve_rng_state (default true): the default CPU generator's state, and the default
//     CUDA generator's of the inputs' GPU, are saved before the forward and restored for the
//     recomputation, then put back (torch.random.fork_rng), so dropout masks are identical and
//     the generators' streams after backward are those of a run without checkpointing. Off:
//     the recomputation draws from the live generators.
//   - The autocast state of the forward (both devices) is replayed during the recomputation.
//   - fn must return one floating-point tensor and must not change anything but its result.
//   - The backward of the recomputation runs inside the outer backward (a reentrant backward,
//     as torch's use_reentrant=True), and the parameters' gradients leave through this node's
//     edges to their accumulators, so DDP's gradient hooks fire as usual. Whenever an input
//     requires grad (every HF model whose embeddings train) the results are those of both
//     torch variants; when none does, the parameters still get their gradients, as with
//     use_reentrant=False (use_reentrant=True would leave them None with a warning).
//   - CheckpointingOptions::FromKwargs parses HF's gradient_checkpointing_kwargs (a JSON
//     object): use_reentrant (true/false; both give these results — loom has one
//     implementation), preserve_rng_state (bool); other keys are InvalidArgument naming them.
//
// Example:
//   hidden = Checkpoint([&](const std::vector<at::Tensor>& in) { return layer->Forward(in[0], mask); },
//                       {hidden}, layer->parameters(), options);
#ifndef LOOM_MODELING_ACTIVATION_CHECKPOINT_H_
#define LOOM_MODELING_ACTIVATION_CHECKPOINT_H_

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::modeling {

struct CheckpointingOptions {
  bool preserve_rng_state = true;
  bool use_reentrant = true;  // recorded (training_args round trip); results are the same

  // HF's gradient_checkpointing_kwargs ("" or "{}" gives the defaults).
  static absl::StatusOr<CheckpointingOptions> FromKwargs(const std::string& json_object);
};

using CheckpointFn = std::function<at::Tensor(const std::vector<at::Tensor>& inputs)>;

at::Tensor Checkpoint(CheckpointFn fn, const std::vector<at::Tensor>& inputs,
                      const std::vector<at::Tensor>& params,
                      const CheckpointingOptions& options = {});

}  // namespace loom::modeling

#endif  // LOOM_MODELING_ACTIVATION_CHECKPOINT_H_
