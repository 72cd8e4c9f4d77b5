#include "base/torch_compat.h"

#include <ATen/ATen.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace loom::base {

at::Tensor ScaledDotProductAttention(const at::Tensor& query, const at::Tensor& key,
                                     const at::Tensor& value, const at::Tensor& attn_mask,
                                     double dropout_p, bool is_causal) {
#if LOOM_TORCH_AT_LEAST(2, 1)
  if constexpr (kHasScaledDotProductAttention) {
    std::optional<at::Tensor> mask;
    if (attn_mask.defined()) mask = attn_mask;
    return at::scaled_dot_product_attention(query, key, value, mask, dropout_p, is_causal);
  }
#endif
  throw std::logic_error(std::string("at::scaled_dot_product_attention needs LibTorch >= 2.1.1; "
                                     "this build links LibTorch ") +
                         kLibTorchVersion);
}

}  // namespace loom::base

namespace loom::base::autocast_compat {

// LibTorch 2.4 made the autocast functions device-agnostic and deprecated the per-device ones
// (pytorch#124359); 1.13 only has the per-device ones (CPU, and "the GPU" for CUDA).
#if LOOM_TORCH_AT_LEAST(2, 4)

bool IsEnabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }

void SetEnabled(c10::DeviceType device, bool enabled) {
  at::autocast::set_autocast_enabled(device, enabled);
}

at::ScalarType GetDtype(c10::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}

void SetDtype(c10::DeviceType device, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}

#else

bool IsEnabled(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled()
                                        : at::autocast::is_enabled();
}

void SetEnabled(c10::DeviceType device, bool enabled) {
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
  } else {
    at::autocast::set_enabled(enabled);
  }
}

at::ScalarType GetDtype(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
}

void SetDtype(c10::DeviceType device, at::ScalarType dtype) {
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
}

#endif

}  // namespace loom::base::autocast_compat
