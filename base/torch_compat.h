// The one place where loom's code meets the differences between the LibTorch versions it
// builds against: 2.11 from the pinned torch wheel (the default, with CUDA; --config=torch2
// without) and Debian's 1.13 (--config=debian). Code elsewhere in the tree uses these names and
// never tests TORCH_VERSION_* itself.
//
// Contents:
//   LOOM_TORCH_AT_LEAST(major, minor)  true when building against LibTorch >= major.minor.
//   AllocatorBase       a c10::Allocator whose subclasses implement AllocateBytes() once;
//                       it supplies the virtuals whose signatures changed (allocate() lost
//                       its const in 2.x, copy_data() became pure virtual).
//   autocast_compat::   enabled / dtype of autocast for a device type (2.4 made these
//                       functions device-agnostic and deprecated the per-device ones).
//   kHasScaledDotProductAttention / ScaledDotProductAttention()
//                       at::scaled_dot_product_attention (absent from 1.13). The bar is
//                       transformers 4.41's is_torch_sdpa_available: torch >= 2.1.1. On an
//                       older LibTorch ScaledDotProductAttention throws std::logic_error;
//                       callers check kHasScaledDotProductAttention first and refuse with a
//                       Status.
//   kLibTorchVersion    "major.minor.patch" of the LibTorch this build links, for messages.
//   C10dBackend         (c10d_compat.h, for code over c10d) the class a c10d communication
//                       backend derives from: c10d::ProcessGroup in 1.x, c10d::Backend in 2.x.
//
// Example:
//   class CountingAllocator : public loom::base::AllocatorBase {
//     c10::DataPtr AllocateBytes(size_t n) const override { ... }
//     c10::DeleterFnPtr raw_deleter() const override { ... }
//   };
//   loom::base::autocast_compat::SetEnabled(c10::DeviceType::CPU, true);
//   if (loom::base::kHasScaledDotProductAttention) {
//     out = loom::base::ScaledDotProductAttention(q, k, v, mask, /*dropout_p=*/0.0,
//                                                 /*is_causal=*/false);
//   }
#ifndef LOOM_BASE_TORCH_COMPAT_H_
#define LOOM_BASE_TORCH_COMPAT_H_

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#include <cstddef>

#define LOOM_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||       \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace loom::base {

inline constexpr char kLibTorchVersion[] = TORCH_VERSION;

// transformers 4.41 `is_torch_sdpa_available`: torch >= 2.1.1.
inline constexpr bool kHasScaledDotProductAttention =
    LOOM_TORCH_AT_LEAST(2, 2) ||
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 1 && TORCH_VERSION_PATCH >= 1);

// torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
// is_causal) with the default scale (1 / sqrt(query.size(-1))); an undefined `attn_mask` is
// None. Throws std::logic_error when !kHasScaledDotProductAttention.
at::Tensor ScaledDotProductAttention(const at::Tensor& query, const at::Tensor& key,
                                     const at::Tensor& value, const at::Tensor& attn_mask,
                                     double dropout_p, bool is_causal);

class AllocatorBase : public c10::Allocator {
 public:
  // Allocates n bytes; the DataPtr's data must equal its context (raw_allocate's users rely
  // on it). Const because LibTorch 1.13 calls allocate() on a const Allocator.
  virtual c10::DataPtr AllocateBytes(size_t n) const = 0;

#if LOOM_TORCH_AT_LEAST(2, 0)
  c10::DataPtr allocate(size_t n) override { return AllocateBytes(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return AllocateBytes(n); }
#endif
};

namespace autocast_compat {

bool IsEnabled(c10::DeviceType device);
void SetEnabled(c10::DeviceType device, bool enabled);
at::ScalarType GetDtype(c10::DeviceType device);
void SetDtype(c10::DeviceType device, at::ScalarType dtype);

}  // namespace autocast_compat

}  // namespace loom::base

#endif  // LOOM_BASE_TORCH_COMPAT_H_
