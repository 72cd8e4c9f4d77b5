// HostOptions: fp32 on the CPU, page-locked only when asked and CUDA is there.
#include "sharding/offload/offload.h"

#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

TEST(OffloadTest, HostOptions) {
  OffloadOptions o;
  EXPECT_FALSE(o.any());
  o.optimizer = true;
  EXPECT_TRUE(o.any());
  at::TensorOptions plain = HostOptions(o);
  EXPECT_TRUE(plain.device().is_cpu());
  EXPECT_EQ(plain.dtype(), at::kFloat);
  EXPECT_FALSE(plain.pinned_memory());
  o.pin_memory = true;
  EXPECT_EQ(HostOptions(o).pinned_memory(), at::hasCUDA());
  at::Tensor t = at::zeros({3}, HostOptions(o));
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_EQ(t.is_pinned(), at::hasCUDA());
}

TEST(OffloadTest, Suffix) {
  OffloadOptions o;
  EXPECT_EQ(OffloadSuffix(o), "");
  o.optimizer = true;
  EXPECT_EQ(OffloadSuffix(o), " (offload: optimizer cpu)");
  o.params = true;
  EXPECT_EQ(OffloadSuffix(o), " (offload: optimizer cpu, params cpu)");
  o.optimizer_nvme_path = "/x";
  o.params = false;
  EXPECT_EQ(OffloadSuffix(o), " (offload: optimizer nvme)");
}

}  // namespace
}  // namespace loom::sharding
