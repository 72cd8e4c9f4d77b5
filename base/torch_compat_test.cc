#include "base/torch_compat.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace loom::base {
namespace {

TEST(TorchCompatTest, AutocastStateRoundTripsOnCpu) {
  const bool was_enabled = autocast_compat::IsEnabled(c10::DeviceType::CPU);
  const at::ScalarType was_dtype = autocast_compat::GetDtype(c10::DeviceType::CPU);
  autocast_compat::SetEnabled(c10::DeviceType::CPU, !was_enabled);
  EXPECT_EQ(autocast_compat::IsEnabled(c10::DeviceType::CPU), !was_enabled);
#if LOOM_TORCH_AT_LEAST(2, 0)
  const at::ScalarType other = at::kHalf;
#else
  const at::ScalarType other = at::kBFloat16;  // torch 1.13's CPU autocast takes bf16 only
#endif
  autocast_compat::SetDtype(c10::DeviceType::CPU, other);
  EXPECT_EQ(autocast_compat::GetDtype(c10::DeviceType::CPU), other);
  autocast_compat::SetDtype(c10::DeviceType::CPU, was_dtype);
  autocast_compat::SetEnabled(c10::DeviceType::CPU, was_enabled);
  EXPECT_EQ(autocast_compat::IsEnabled(c10::DeviceType::CPU), was_enabled);
  EXPECT_EQ(autocast_compat::GetDtype(c10::DeviceType::CPU), was_dtype);
}

// torch.nn.functional.scaled_dot_product_attention's documented math, written out:
// softmax(q k^T / sqrt(d) + mask) v.
at::Tensor AttentionByHand(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& mask) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  return at::matmul(at::softmax(scores + mask, -1), v);
}

TEST(TorchCompatTest, ScaledDotProductAttentionIsTheDocumentedMathOrRefused) {
  torch::manual_seed(3);
  const at::Tensor q = torch::randn({2, 3, 5, 4}, torch::kFloat64);
  const at::Tensor k = torch::randn({2, 3, 5, 4}, torch::kFloat64);
  const at::Tensor v = torch::randn({2, 3, 5, 4}, torch::kFloat64);
  const at::Tensor mask = torch::zeros({2, 1, 1, 5}, torch::kFloat64).index_fill_(
      3, torch::tensor({4}), -1e9);  // the last key is padding
  if (!kHasScaledDotProductAttention) {
    EXPECT_THROW(ScaledDotProductAttention(q, k, v, mask, 0.0, false), std::logic_error);
    return;
  }
  EXPECT_TRUE(at::allclose(ScaledDotProductAttention(q, k, v, mask, 0.0, false),
                           AttentionByHand(q, k, v, mask), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(ScaledDotProductAttention(q, k, v, at::Tensor(), 0.0, false),
                           AttentionByHand(q, k, v, torch::zeros({1}, torch::kFloat64)), 1e-12,
                           1e-12));
}

TEST(TorchCompatTest, SdpaAvailabilityFollowsTheVersionString) {
  int major = 0, minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(kLibTorchVersion, "%d.%d.%d", &major, &minor, &patch), 3)
      << kLibTorchVersion;
  const bool at_least_2_1_1 =
      major > 2 || (major == 2 && (minor > 1 || (minor == 1 && patch >= 1)));
  EXPECT_EQ(kHasScaledDotProductAttention, at_least_2_1_1) << kLibTorchVersion;
}

}  // namespace
}  // namespace loom::base
