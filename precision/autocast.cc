#include "precision/autocast.h"

#include <ATen/autocast_mode.h>

#include "absl/strings/str_cat.h"
#include "base/torch_compat.h"

namespace loom::precision {
namespace {

using ::loom::base::autocast_compat::GetDtype;
using ::loom::base::autocast_compat::IsEnabled;
using ::loom::base::autocast_compat::SetDtype;
using ::loom::base::autocast_compat::SetEnabled;

}  // namespace

absl::StatusOr<AutocastSpec> MakeAutocastSpec(c10::DeviceType device, at::ScalarType dtype) {
  if (device == c10::DeviceType::CPU && dtype != at::kBFloat16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CPU autocast supports bfloat16 only (LibTorch's AutocastCPU), not ", c10::toString(dtype)));
  }
  if (device == c10::DeviceType::CUDA && dtype != at::kBFloat16 && dtype != at::kHalf) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA autocast supports float16 and bfloat16, not ", c10::toString(dtype)));
  }
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    return absl::InvalidArgumentError(
        absl::StrCat("autocast on ", c10::DeviceTypeName(device), " is not supported by loom"));
  }
  AutocastSpec spec;
  spec.device = device;
  spec.dtype = dtype;
  return spec;
}

AutocastGuard::AutocastGuard(std::optional<AutocastSpec> spec) : spec_(spec) {
  if (!spec_) return;
  prev_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  prev_enabled_ = IsEnabled(spec_->device);
  prev_dtype_ = GetDtype(spec_->device);
  if (spec_->device == c10::DeviceType::CPU) {
    // torch.autocast's CPU order: enabled, dtype, nesting.
    SetEnabled(spec_->device, spec_->enabled);
    SetDtype(spec_->device, spec_->dtype);
  } else {
    SetDtype(spec_->device, spec_->dtype);
    SetEnabled(spec_->device, spec_->enabled);
  }
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(spec_->cache_enabled);
}

AutocastGuard::~AutocastGuard() {
  if (!spec_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetEnabled(spec_->device, prev_enabled_);
  SetDtype(spec_->device, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_enabled_);
}

AutocastState CurrentAutocastState() {
  AutocastState s;
  s.cpu_enabled = IsEnabled(c10::DeviceType::CPU);
  s.cpu_dtype = GetDtype(c10::DeviceType::CPU);
  s.cuda_enabled = IsEnabled(c10::DeviceType::CUDA);
  s.cuda_dtype = GetDtype(c10::DeviceType::CUDA);
  s.cache_enabled = at::autocast::is_autocast_cache_enabled();
  return s;
}

namespace {
AutocastSpec SpecFor(c10::DeviceType device, bool enabled, at::ScalarType dtype, bool cache) {
  AutocastSpec spec;
  spec.device = device;
  spec.enabled = enabled;
  spec.dtype = dtype;
  spec.cache_enabled = cache;
  return spec;
}
}  // namespace

AutocastStateGuard::AutocastStateGuard(const AutocastState& state)
    : cuda_(SpecFor(c10::DeviceType::CUDA, state.cuda_enabled, state.cuda_dtype,
                    state.cache_enabled)),
      cpu_(SpecFor(c10::DeviceType::CPU, state.cpu_enabled, state.cpu_dtype,
                   state.cache_enabled)) {}

bool AutocastActive() {
  return IsEnabled(c10::DeviceType::CPU) || IsEnabled(c10::DeviceType::CUDA);
}

}  // namespace loom::precision
