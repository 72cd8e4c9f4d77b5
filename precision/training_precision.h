// TrainingPrecision: what a training loop does differently per precision policy, chosen once
// per run so the loop has no precision branches — HF's amp path (transformers 4.38–4.41 with
// accelerate 0.27): the forward under autocast with fp16/bf16 outputs turned into fp32
// (accelerate's convert_outputs_to_fp32), the loss scaled before backward, the gradients
// unscaled before clipping, the optimizer step skipped on inf/nan and the scale updated.
//
// Contract:
//   - Create(policy): kFp32, kAutocast, and kHalfWeights in bf16 (DeepSpeed's bf16: no
//     autocast and no loss scaling here — the ZeRO strategy keeps the fp32 master weights);
//     fp16 weights (DeepSpeed's loss scaler) are Unimplemented.
//   - ForwardAutocast(): the autocast spec around the model's forward (accelerate wraps
//     model.forward with it); LossAutocast(): the one around the whole loss computation (HF's
//     compute_loss_context_manager: only cpu_amp has one). nullopt: none. Backward runs outside
//     both.
//   - OutputToFp32(t): t.float() for bf16/fp16 tensors when the forward autocasts; t otherwise.
//   - ScaleLoss(loss): loss * scale with a GradScaler (--fp16), loss otherwise.
//   - UnscaleGradients(params): the GradScaler's unscale (call before clipping so the
//     clipped and logged norm is unscaled); nothing otherwise.
//   - OptimizerStep(optimizer, params): with a GradScaler its step + update (returns false when
//     the step was skipped for inf/nan: the caller then does not step the lr scheduler, as HF);
//     otherwise optimizer.step() and true.
//   - grad_scaler(): the scaler (for scaler.pt), null without one.
//
// Example:
//   ASSIGN_OR_RETURN(auto precision, TrainingPrecision::Create(policy));
//   { AutocastGuard autocast(precision->ForwardAutocast()); loss = precision->OutputToFp32(fwd()); }
//   precision->ScaleLoss(loss / ga).backward();
//   RETURN_IF_ERROR(precision->UnscaleGradients(params));
//   ASSIGN_OR_RETURN(bool stepped, precision->OptimizerStep(optimizer, params));
#ifndef LOOM_PRECISION_TRAINING_PRECISION_H_
#define LOOM_PRECISION_TRAINING_PRECISION_H_

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "precision/autocast.h"
#include "precision/grad_scaler.h"
#include "precision/policy.h"

namespace loom::precision {

class TrainingPrecision {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingPrecision>> Create(const PrecisionPolicy& policy);

  const PrecisionPolicy& policy() const { return policy_; }
  std::optional<AutocastSpec> ForwardAutocast() const { return policy_.autocast; }
  std::optional<AutocastSpec> LossAutocast() const {
    return policy_.backend == "cpu_amp" ? policy_.autocast : std::nullopt;
  }
  // Forgets a step an error left half done (GradScaler::ResetStep).
  void ResetStep() {
    if (scaler_) scaler_->ResetStep();
  }
  at::Tensor OutputToFp32(const at::Tensor& t) const;
  at::Tensor ScaleLoss(const at::Tensor& loss) const;
  absl::Status UnscaleGradients(const std::vector<at::Tensor>& params);
  absl::StatusOr<bool> OptimizerStep(torch::optim::Optimizer& optimizer,
                                     const std::vector<at::Tensor>& params);
  GradScaler* grad_scaler() { return scaler_ ? &*scaler_ : nullptr; }
  const GradScaler* grad_scaler() const { return scaler_ ? &*scaler_ : nullptr; }

 private:
  TrainingPrecision(PrecisionPolicy policy, std::optional<GradScaler> scaler)
      : policy_(std::move(policy)), scaler_(std::move(scaler)) {}

  PrecisionPolicy policy_;
  std::optional<GradScaler> scaler_;
};

}  // namespace loom::precision

#endif  // LOOM_PRECISION_TRAINING_PRECISION_H_
