#include "precision/cpu_features.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::testing::HasSubstr;

// The kernel's own reading of CPUID (flags the kernel can use), from /proc/cpuinfo.
std::set<std::string> ProcCpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    std::string w;
    while (words >> w) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeaturesTest, AgreesWithProcCpuinfo) {
  const std::set<std::string> flags = ProcCpuinfoFlags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512dq, flags.count("avx512dq") == 1);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") == 1);
}

CpuFeatures Zen4() {
  CpuFeatures f;
  f.avx2 = f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512_bf16 = true;
  return f;
}

TEST(CpuFeaturesTest, Classification) {
  CpuBf16 native = ClassifyBf16(Zen4(), /*mkldnn_usable=*/true, "");
  EXPECT_EQ(native.support, Bf16Support::kNative);
  EXPECT_EQ(native.reason, "native (avx512_bf16)");
  EXPECT_EQ(native.Describe(),
            "cpu: avx2 avx512f avx512bw avx512vl avx512dq avx512_bf16; bf16: native (avx512_bf16)");

  CpuFeatures zen3;
  zen3.avx2 = true;
  CpuBf16 slow = ClassifyBf16(zen3, true, "");
  EXPECT_EQ(slow.support, Bf16Support::kSlow);
  EXPECT_THAT(slow.reason, HasSubstr("no AVX-512 (avx2)"));

  CpuFeatures skylake = Zen4();
  skylake.avx512_bf16 = false;
  EXPECT_EQ(ClassifyBf16(skylake, true, "").support, Bf16Support::kEmulated);

  CpuFeatures sapphire = skylake;
  sapphire.amx_bf16 = true;
  EXPECT_EQ(ClassifyBf16(sapphire, true, "").reason, "native (amx_bf16)");

  EXPECT_EQ(ClassifyBf16(Zen4(), /*mkldnn_usable=*/false, "").support, Bf16Support::kSlow);
  EXPECT_EQ(ClassifyBf16(Zen4(), true, "avx2").support, Bf16Support::kSlow);
  EXPECT_EQ(ClassifyBf16(Zen4(), true, "AVX512_CORE_VNNI").support, Bf16Support::kEmulated);
  EXPECT_EQ(ClassifyBf16(Zen4(), true, "avx512_core_bf16").support, Bf16Support::kNative);
  EXPECT_EQ(ClassifyBf16(Zen4(), true, "ALL").support, Bf16Support::kNative);
  EXPECT_EQ(ClassifyBf16(Zen4(), true, "nonsense").support, Bf16Support::kNative);
}

TEST(CpuFeaturesTest, CurrentFollowsTheEnvironmentCap) {
  const CpuFeatures here = DetectCpuFeatures();
  unsetenv("ONEDNN_MAX_CPU_ISA");
  unsetenv("DNNL_MAX_CPU_ISA");
  const CpuBf16 now = CurrentBf16Support();
  EXPECT_EQ(now.features.FlagList(), here.FlagList());
  setenv("ONEDNN_MAX_CPU_ISA", "SSE41", 1);
  EXPECT_EQ(CurrentBf16Support().support, Bf16Support::kSlow);
  unsetenv("ONEDNN_MAX_CPU_ISA");
}

}  // namespace
}  // namespace loom::precision
