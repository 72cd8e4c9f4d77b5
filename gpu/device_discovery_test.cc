// Device discovery on this GPU-less machine: no driver is a one-line explanation, not an error;
// PCI bus ids of NVML's and CUDA's spellings compare equal.
#include "gpu/device_discovery.h"

#include <dlfcn.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::gpu {
namespace {

TEST(DeviceDiscoveryTest, CanonicalPciBusIds) {
  EXPECT_EQ(CanonicalPciBusId("0000:19:00.0"), "00000000:19:00.0");
  EXPECT_EQ(CanonicalPciBusId("00000000:81:00.0"), "00000000:81:00.0");
  EXPECT_EQ(CanonicalPciBusId("0001:c1:1f.3"), "00000001:C1:1F.3");
  EXPECT_EQ(CanonicalPciBusId("garbage"), "");
}

TEST(DeviceDiscoveryTest, WithoutADriverSaysSoInOneLine) {
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  const Discovered d = SystemDevices()->Discover();
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_THAT(d.error, ::testing::HasSubstr("no NVIDIA driver here"));
  EXPECT_EQ(d.error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace loom::gpu
