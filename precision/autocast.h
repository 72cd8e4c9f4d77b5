// LibTorch's own autocast, entered and left from C++ exactly as Python's torch.autocast does
// (torch/amp/autocast_mode.py __enter__/__exit__), so the op casting rules are those of
// torch.autocast on the same LibTorch build: on CPU (1.13) linear/matmul/mm/bmm/addmm/conv in
// bf16, the losses (cross_entropy, nll, mse, bce, ...) in fp32, other ops in their inputs' dtype.
//
// Contract:
//   - AutocastGuard(spec) with a spec: saves the thread's autocast state for spec.device (enabled,
//     dtype) and the cast cache flag, sets enabled / dtype / cache, increments the nesting
//     count; the destructor decrements it, clears the cast cache when it reaches 0, and restores
//     what it saved. `enabled = false` switches autocast off inside the scope (nested use).
//     AutocastGuard(std::nullopt) does nothing (HF's nullcontext when no amp is used).
//   - spec.device is kCPU (dtype must be bf16, as LibTorch 1.13 requires) or kCUDA (bf16 or
//     fp16); other devices or dtypes are rejected by MakeAutocastSpec with InvalidArgument.
//   - CurrentAutocastState() / AutocastStateGuard capture and re-enter both devices' state
//     (torch.utils.checkpoint replays it when recomputing).
//   - Autocast state is thread-local (LibTorch's TLS): a guard affects its own thread only.
//   - Compiles against LibTorch 1.13 (per-device functions) and 2.4+ (the device-agnostic API).
//
// Example:
//   ASSIGN_OR_RETURN(AutocastSpec spec, MakeAutocastSpec(at::kCPU, at::kBFloat16));
//   {
//     AutocastGuard autocast(spec);
//     out = model.Forward(batch);   // matmuls in bf16
//   }
//   out.loss.backward();            // outside the autocast region, as HF does
#ifndef LOOM_PRECISION_AUTOCAST_H_
#define LOOM_PRECISION_AUTOCAST_H_

#include <ATen/ATen.h>

#include <optional>

#include "absl/status/statusor.h"

namespace loom::precision {

struct AutocastSpec {
  c10::DeviceType device = c10::DeviceType::CPU;
  at::ScalarType dtype = at::kBFloat16;
  bool enabled = true;
  bool cache_enabled = true;
};

// Checks the device/dtype pair (see the contract).
absl::StatusOr<AutocastSpec> MakeAutocastSpec(c10::DeviceType device, at::ScalarType dtype);

class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<AutocastSpec> spec);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<AutocastSpec> spec_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kBFloat16;
  bool prev_cache_enabled_ = true;
};

// Both devices' thread-local autocast settings.
struct AutocastState {
  bool cpu_enabled = false;
  at::ScalarType cpu_dtype = at::kBFloat16;
  bool cuda_enabled = false;
  at::ScalarType cuda_dtype = at::kHalf;
  bool cache_enabled = true;
};
AutocastState CurrentAutocastState();

// Enters `state` for both devices (CUDA first, then CPU, as torch.utils.checkpoint does).
class AutocastStateGuard {
 public:
  explicit AutocastStateGuard(const AutocastState& state);

 private:
  AutocastGuard cuda_;
  AutocastGuard cpu_;
};

// Whether any autocast is on in this thread.
bool AutocastActive();

}  // namespace loom::precision

#endif  // LOOM_PRECISION_AUTOCAST_H_
