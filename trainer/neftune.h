// NEFTune (HF's neftune_post_forward_hook, transformers 4.38–4.41):
// uniform noise added to the input embeddings' output while training.
//
// Contract:
//   - NeftuneNoise(output, alpha, training): in training mode, output + U(-mag, mag) with
//     mag = alpha / sqrt(output.size(1) * output.size(2)) computed as HF does it (a float32
//     tensor: sqrt of the int64 count, reciprocal, times alpha), the noise drawn from the
//     default generator of output's device (torch.zeros_like(output).uniform_); otherwise
//     output unchanged. Output must be [batch, seq, hidden]: other ranks throw
//     std::invalid_argument.
//   - ActivateNeftune(model, alpha): registers that hook on model.InputEmbeddingHooks() and
//     returns its handle (the noise goes when the handle does). InvalidArgument when the model
//     exposes no input embeddings (CheckNeftuneSupported says so without registering).
//
// Example:
//   ASSIGN_OR_RETURN(modeling::ForwardHookHandle neftune, ActivateNeftune(model, 5.0));
//   ... train ...
//   neftune.Remove();   // the model's forward is as before
#ifndef LOOM_TRAINER_NEFTUNE_H_
#define LOOM_TRAINER_NEFTUNE_H_

#include <ATen/ATen.h>

#include "absl/status/statusor.h"
#include "modeling/forward_hooks.h"
#include "modeling/model.h"

namespace loom::trainer {

at::Tensor NeftuneNoise(const at::Tensor& output, double alpha, bool training);

// HF's mag_norm for a [*, seq_len, hidden] output, as the float32 value HF computes.
double NeftuneMagnitude(int64_t seq_len, int64_t hidden, double alpha);

absl::Status CheckNeftuneSupported(modeling::Model& model);
absl::StatusOr<modeling::ForwardHookHandle> ActivateNeftune(modeling::Model& model, double alpha);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_NEFTUNE_H_
