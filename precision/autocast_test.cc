#include "precision/autocast.h"

#include <torch/torch.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

AutocastSpec CpuBf16() {
  absl::StatusOr<AutocastSpec> spec = MakeAutocastSpec(c10::DeviceType::CPU, at::kBFloat16);
  EXPECT_TRUE(spec.ok());
  return *spec;
}

TEST(AutocastTest, CpuBf16FollowsLibTorchsOpLists) {
  torch::manual_seed(0);
  torch::nn::Linear linear(8, 4);
  at::Tensor x = torch::randn({3, 8});
  at::Tensor labels = torch::tensor({0, 1, 3});
  ASSERT_FALSE(AutocastActive());
  {
    AutocastGuard autocast(CpuBf16());
    EXPECT_TRUE(AutocastActive());
    at::Tensor y = linear->forward(x);
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);                       // lower-precision list
    EXPECT_EQ(at::cross_entropy_loss(y, labels).scalar_type(), at::kFloat);  // fp32 list
    EXPECT_EQ(at::softmax(y, -1).scalar_type(), at::kBFloat16);      // not listed: input dtype
    EXPECT_EQ((y + x.narrow(1, 0, 4)).scalar_type(), at::kFloat);    // promotion
  }
  EXPECT_FALSE(AutocastActive());
  EXPECT_EQ(linear->forward(x).scalar_type(), at::kFloat);
}

TEST(AutocastTest, NestingDisablingAndRestoring) {
  torch::nn::Linear linear(4, 4);
  at::Tensor x = torch::randn({2, 4});
  AutocastSpec off = CpuBf16();
  off.enabled = false;
  {
    AutocastGuard outer(CpuBf16());
    {
      AutocastGuard inner(off);  // torch.autocast(enabled=False) inside an autocast region
      EXPECT_EQ(linear->forward(x).scalar_type(), at::kFloat);
    }
    EXPECT_EQ(linear->forward(x).scalar_type(), at::kBFloat16);
    {
      AutocastGuard nothing(std::nullopt);  // HF's nullcontext
      EXPECT_EQ(linear->forward(x).scalar_type(), at::kBFloat16);
    }
  }
  EXPECT_EQ(linear->forward(x).scalar_type(), at::kFloat);
}

TEST(AutocastTest, StateCaptureAndReplay) {
  AutocastState before = CurrentAutocastState();
  EXPECT_FALSE(before.cpu_enabled);
  EXPECT_FALSE(before.cuda_enabled);
  AutocastState inside;
  {
    AutocastGuard autocast(CpuBf16());
    inside = CurrentAutocastState();
  }
  EXPECT_TRUE(inside.cpu_enabled);
  EXPECT_EQ(inside.cpu_dtype, at::kBFloat16);
  torch::nn::Linear linear(4, 4);
  {
    AutocastStateGuard replay(inside);
    EXPECT_EQ(linear->forward(torch::randn({1, 4})).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(CurrentAutocastState().cpu_enabled);
}

TEST(AutocastTest, SpecsLibTorchCannotRunAreRefused) {
  EXPECT_THAT(MakeAutocastSpec(c10::DeviceType::CPU, at::kHalf),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bfloat16 only")));
  EXPECT_THAT(MakeAutocastSpec(c10::DeviceType::CUDA, at::kFloat),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float16 and bfloat16")));
  EXPECT_OK(MakeAutocastSpec(c10::DeviceType::CUDA, at::kHalf).status());
}

}  // namespace
}  // namespace loom::precision
