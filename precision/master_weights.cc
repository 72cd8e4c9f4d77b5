#include "precision/master_weights.h"

#include <torch/types.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace loom::precision {

absl::StatusOr<MasterWeights> MasterWeights::Create(std::vector<at::Tensor> params, int rank) {
  std::vector<at::Tensor> master;
  master.reserve(params.size());
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    if (!p.defined() || !at::isFloatingType(p.scalar_type())) {
      return absl::InvalidArgumentError(
          absl::StrCat("MasterWeights: parameter ", i, " is not a floating-point tensor"));
    }
    master.push_back(p.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true)
                         .set_requires_grad(true));
  }
  return MasterWeights(std::move(params), std::move(master), rank);
}

void MasterWeights::ClearModelGrads() {
  for (at::Tensor& p : params_) {
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

absl::StatusOr<HalfStepResult> MasterWeights::Step(torch::optim::Optimizer& optimizer,
                                                   DeepSpeedLossScaler& scaler, double clip_grad) {
  torch::NoGradGuard no_grad;
  HalfStepResult result;
  bool overflow = false;
  for (const at::Tensor& p : params_) {
    if (p.scalar_type() != at::kHalf || !p.grad().defined()) continue;
    if (p.grad().isfinite().logical_not().any().item<bool>()) {
      overflow = true;
      break;
    }
  }
  const double prev_scale = scaler.loss_scale();
  absl::StatusOr<std::string> line = scaler.Update(overflow, rank_);
  if (!line.ok()) return line.status();
  result.overflow_line = *line;
  if (overflow) {
    ClearModelGrads();
    result.skipped = true;
    return result;
  }
  // get_grad_norm_direct: float64 norm per tensor, squares summed, then float32, then sqrt.
  std::vector<at::Tensor> norms;
  for (const at::Tensor& p : params_) {
    if (p.grad().defined()) norms.push_back(at::norm(p.grad().to(at::kDouble), 2));
  }
  double norm = 0;
  if (!norms.empty()) {
    const float total = at::stack(norms).square().sum().to(at::kFloat).item<float>();
    norm = std::pow(static_cast<double>(total), 0.5);
    norm = static_cast<float>(norm);
    if (!std::isfinite(norm)) norm = -1;
  }
  result.grad_norm = norm / prev_scale;
  double combined_scale = scaler.loss_scale();
  if (clip_grad > 0) {
    const double clip = ((norm / scaler.loss_scale()) + 1e-6) / clip_grad;
    if (clip > 1) combined_scale = clip * scaler.loss_scale();
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& g = params_[i].grad();
    if (!g.defined()) {
      master_[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::Tensor fp32 = g.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
    fp32.mul_(1.0 / combined_scale);
    master_[i].mutable_grad() = fp32;
  }
  optimizer.step();
  CopyMasterToModel();
  ClearModelGrads();
  return result;
}

void MasterWeights::CopyMasterToModel() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(master_[i]);
}

}  // namespace loom::precision
