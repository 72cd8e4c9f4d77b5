// GradScaler: dynamic loss scaling with torch.cuda.amp.GradScaler's rules (HF's fp16 amp path),
// in plain tensor ops so it runs on any device (the CPU runs it in tests; LibTorch 1.13's fused
// _amp_* kernels are CUDA-only).
//
// Contract (torch 1.13 torch/cuda/amp/grad_scaler.py, the update kernel of AmpKernels.cu):
//   - Options: init_scale 2^16, growth_factor 2, backoff_factor 0.5, growth_interval 2000;
//     Create() refuses growth_factor <= 1, backoff_factor >= 1, growth_interval < 1.
//   - Scale(loss) = loss * scale (a float32 0-dim tensor on the loss's device).
//   - Unscale(params): inv_scale = float(1 / double(scale)); every defined grad is checked for
//     inf/nan (found_inf) and multiplied by it in place (CUDA grads by torch's fused
//     _amp_foreach_non_finite_check_and_unscale_, others element-wise with the same float
//     arithmetic), with one host synchronisation per step. Once per step: a second call before
//     Update() is FailedPrecondition ("unscale_() has already been called ..."). fp16 grads are
//     refused ("Attempting to unscale FP16 gradients."): the optimizer must hold fp32 weights.
//   - Step(step_fn, params): unscales first when Unscale was not called; runs step_fn unless
//     found_inf; then Update(); returns whether step_fn ran. (torch's step() + update(), as
//     accelerate calls them.)
//   - Update(): on found_inf scale *= backoff_factor and the growth tracker resets; otherwise
//     the tracker counts the clean step and at growth_interval the scale *= growth_factor and
//     the tracker resets. The product is computed in double and stored as float, as the CUDA
//     kernel does. One deliberate choice: a grown scale that is not finite in float32 is not
//     taken (the guard torch added in 2.1; 1.13 would store inf), the tracker still resets.
//   - State(): HF/torch's state_dict() — scale (the float32 scale as a double),
//     growth_factor, backoff_factor, growth_interval, _growth_tracker; LoadState() puts it
//     back exactly (a resumed run scales exactly as the uninterrupted one).
//
// Example:
//   ASSIGN_OR_RETURN(GradScaler scaler, GradScaler::Create({}));
//   scaler.Scale(loss / ga).backward();
//   RETURN_IF_ERROR(scaler.Unscale(params));            // before clipping
//   grad_norm = ClipGradNorm(params, 1.0);
//   ASSIGN_OR_RETURN(bool stepped, scaler.Step([&] { optimizer.step(); }, params));
//   if (stepped) scheduler.Step();
#ifndef LOOM_PRECISION_GRAD_SCALER_H_
#define LOOM_PRECISION_GRAD_SCALER_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::precision {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// torch's GradScaler.state_dict() (scaler.pt).
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;

  bool operator==(const GradScalerState& o) const {
    return scale == o.scale && growth_factor == o.growth_factor &&
           backoff_factor == o.backoff_factor && growth_interval == o.growth_interval &&
           growth_tracker == o.growth_tracker;
  }
};

class GradScaler {
 public:
  static absl::StatusOr<GradScaler> Create(const GradScalerOptions& options);

  at::Tensor Scale(const at::Tensor& loss) const;
  absl::Status Unscale(const std::vector<at::Tensor>& params);
  absl::StatusOr<bool> Step(const std::function<void()>& step_fn,
                            const std::vector<at::Tensor>& params);
  void Update();
  // Forgets a step left half done (unscaled, not updated) by an error; the scale and growth
  // tracker stay. Call it before training resumes after a failure.
  void ResetStep() {
    unscaled_ = false;
    found_inf_ = false;
  }

  // The current scale (a float32 value).
  float scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  // Whether Unscale found inf/nan since the last Update().
  bool found_inf() const { return found_inf_; }

  GradScalerState State() const;
  absl::Status LoadState(const GradScalerState& state);
  // torch's state_dict() as an IValue dict (what scaler.pt holds: Python's torch.load gives
  // {'scale': 65536.0, 'growth_factor': 2.0, 'backoff_factor': 0.5, 'growth_interval': 2000,
  // '_growth_tracker': 0}); LoadStateDict reads it back (ints accepted for the floats), errors
  // name the key.
  c10::IValue StateDict() const;
  absl::Status LoadStateDict(const c10::IValue& state);

 private:
  explicit GradScaler(const GradScalerOptions& options);

  float scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
};

}  // namespace loom::precision

#endif  // LOOM_PRECISION_GRAD_SCALER_H_
