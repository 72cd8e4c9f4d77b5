// Half-precision weights with fp32 master weights: the model computes in bf16/fp16, the
// optimizer updates fp32 copies, which are copied back (rounded) after each step — DeepSpeed's
// ZeRO stage 1/2 optimizer step (deepspeed/runtime/zero/stage_1_and_2.py, v0.14) without the
// partitioning, which the sharding strategies add on top.
//
// Contract:
//   - Create(params): `params` are the model's trainable parameters, all floating point
//     (bf16, fp16 or fp32). master()[i] is an fp32 leaf copy of params[i]; build the optimizer
//     over master().
//   - Step(optimizer, scaler, clip_grad) after backward of `loss * scaler.loss_scale()`:
//       1. overflow = any inf/nan in the model's grads (fp16 only, as DeepSpeed checks);
//       2. prev_scale = the scale; scaler.Update(overflow) (its overflow line is returned);
//       3. overflow: the model's grads are cleared, no update (skipped = true);
//       4. else: norm = sqrt(sum of squares of per-tensor float64 norms of the model grads),
//          in float32 (DeepSpeed's get_grad_norm_direct for one parameter group; with several
//          groups DeepSpeed then takes the float32 norm of the group norms — the sharding
//          strategies that split groups must do that; inf/nan -> -1); the grads are copied
//          to the masters in fp32 and multiplied by 1 / combined_scale where combined_scale =
//          scaler.loss_scale() * max(1, (norm / scaler.loss_scale() + 1e-6) / clip_grad) when
//          clip_grad > 0 (DeepSpeed's unscale_and_clip_grads — which uses the scale as updated
//          in step 2, so on a step where a dynamic scale grows the update is halved, exactly as
//          DeepSpeed does); the optimizer steps; masters are copied into the model's weights;
//          the model's grads are cleared. grad_norm = norm / prev_scale.
//   - The masters are what a checkpoint stores as the fp32 weights (zero_to_fp32's source).
//
// Example:
//   ASSIGN_OR_RETURN(MasterWeights mw, MasterWeights::Create(half_params));
//   torch::optim::AdamW opt(mw.master(), torch::optim::AdamWOptions(1e-4));
//   DeepSpeedLossScaler scaler(options);
//   (loss * scaler.loss_scale()).backward();
//   ASSIGN_OR_RETURN(HalfStepResult r, mw.Step(opt, scaler, /*clip_grad=*/1.0));
#ifndef LOOM_PRECISION_MASTER_WEIGHTS_H_
#define LOOM_PRECISION_MASTER_WEIGHTS_H_

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "precision/loss_scaler.h"

namespace loom::precision {

struct HalfStepResult {
  bool skipped = false;
  double grad_norm = 0;       // unscaled; meaningless when skipped
  std::string overflow_line;  // DeepSpeed's rank-0 line, empty when none
};

class MasterWeights {
 public:
  static absl::StatusOr<MasterWeights> Create(std::vector<at::Tensor> params, int rank = 0);

  const std::vector<at::Tensor>& master() const { return master_; }
  const std::vector<at::Tensor>& params() const { return params_; }

  absl::StatusOr<HalfStepResult> Step(torch::optim::Optimizer& optimizer,
                                      DeepSpeedLossScaler& scaler, double clip_grad);

  // Copies the masters into the model weights (after loading masters from a checkpoint).
  void CopyMasterToModel();

 private:
  MasterWeights(std::vector<at::Tensor> params, std::vector<at::Tensor> master, int rank)
      : params_(std::move(params)), master_(std::move(master)), rank_(rank) {}

  void ClearModelGrads();

  std::vector<at::Tensor> params_;
  std::vector<at::Tensor> master_;
  int rank_;
};

}  // namespace loom::precision

#endif  // LOOM_PRECISION_MASTER_WEIGHTS_H_
