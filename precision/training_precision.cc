#include "precision/training_precision.h"

namespace loom::precision {

absl::StatusOr<std::unique_ptr<TrainingPrecision>> TrainingPrecision::Create(
    const PrecisionPolicy& policy) {
  if (policy.mode == PrecisionMode::kHalfWeights && policy.deepspeed_scaler &&
      policy.deepspeed_scaler->half) {
    return absl::UnimplementedError(
        "--deepspeed: fp16 weights with DeepSpeed's loss scaler are not implemented in loom "
        "yet (bf16 is); use the bf16 section");
  }
  std::optional<GradScaler> scaler;
  if (policy.grad_scaler) {
    absl::StatusOr<GradScaler> created = GradScaler::Create(*policy.grad_scaler);
    if (!created.ok()) return created.status();
    scaler = std::move(*created);
  }
  return std::unique_ptr<TrainingPrecision>(new TrainingPrecision(policy, std::move(scaler)));
}

at::Tensor TrainingPrecision::OutputToFp32(const at::Tensor& t) const {
  if (!policy_.autocast || !t.defined()) return t;
  const at::ScalarType type = t.scalar_type();
  return type == at::kHalf || type == at::kBFloat16 ? t.to(at::kFloat) : t;
}

at::Tensor TrainingPrecision::ScaleLoss(const at::Tensor& loss) const {
  return scaler_ ? scaler_->Scale(loss) : loss;
}

absl::Status TrainingPrecision::UnscaleGradients(const std::vector<at::Tensor>& params) {
  return scaler_ ? scaler_->Unscale(params) : absl::OkStatus();
}

absl::StatusOr<bool> TrainingPrecision::OptimizerStep(torch::optim::Optimizer& optimizer,
                                                      const std::vector<at::Tensor>& params) {
  if (!scaler_) {
    optimizer.step();
    return true;
  }
  return scaler_->Step([&optimizer] { optimizer.step(); }, params);
}

}  // namespace loom::precision
