#include "precision/cpu_features.h"

#include <ATen/Context.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LOOM_X86 1
#endif

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom::precision {
namespace {

bool Bit(uint32_t reg, int bit) { return (reg >> bit) & 1u; }

#ifdef LOOM_X86
uint64_t ReadXcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

// oneDNN's ISA names in increasing order (ONEDNN_MAX_CPU_ISA values loom compares against).
int OneDnnIsaRank(std::string isa) {
  isa = absl::AsciiStrToUpper(isa);
  static const char* const kOrder[] = {"SSE41",           "AVX",          "AVX2",
                                       "AVX2_VNNI",       "AVX2_VNNI_2",  "AVX512_CORE",
                                       "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX512_CORE_FP16",
                                       "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16", "ALL"};
  for (int i = 0; i < static_cast<int>(sizeof(kOrder) / sizeof(kOrder[0])); ++i) {
    if (isa == kOrder[i]) return i;
  }
  return -1;  // unknown: oneDNN ignores it
}

}  // namespace

std::string CpuFeatures::FlagList() const {
  std::vector<std::string> flags;
  if (avx2) flags.push_back("avx2");
  if (avx512f) flags.push_back("avx512f");
  if (avx512bw) flags.push_back("avx512bw");
  if (avx512vl) flags.push_back("avx512vl");
  if (avx512dq) flags.push_back("avx512dq");
  if (avx512_bf16) flags.push_back("avx512_bf16");
  if (amx_bf16) flags.push_back("amx_bf16");
  return flags.empty() ? "(no AVX2 or AVX-512)" : absl::StrJoin(flags, " ");
}

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#ifndef LOOM_X86
  return f;  // no x86 extensions: bf16 is classified "slow" (the ARM paths are not modelled)
#else
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = Bit(ecx, 27);
  const uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;            // SSE and AVX state
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;     // XTILECFG, XTILEDATA
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const uint32_t max_subleaf = eax;
  f.avx2 = os_avx && Bit(ebx, 5);
  f.avx512f = os_avx512 && Bit(ebx, 16);
  f.avx512dq = os_avx512 && Bit(ebx, 17);
  f.avx512bw = os_avx512 && Bit(ebx, 30);
  f.avx512vl = os_avx512 && Bit(ebx, 31);
  f.amx_bf16 = os_amx && Bit(edx, 22);
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx512_bf16 = os_avx512 && Bit(eax, 5);
  }
  return f;
#endif
}

const char* Bf16SupportName(Bf16Support support) {
  switch (support) {
    case Bf16Support::kNative:
      return "native";
    case Bf16Support::kEmulated:
      return "emulated";
    case Bf16Support::kSlow:
      return "slow";
  }
  return "slow";
}

CpuBf16 ClassifyBf16(const CpuFeatures& features, bool mkldnn_usable,
                     const std::string& onednn_max_isa) {
  CpuBf16 out;
  out.features = features;
  const int cap = onednn_max_isa.empty() ? -1 : OneDnnIsaRank(onednn_max_isa);
  const bool capped_below_core = cap >= 0 && cap < OneDnnIsaRank("AVX512_CORE");
  const bool capped_below_bf16 = cap >= 0 && cap < OneDnnIsaRank("AVX512_CORE_BF16");
  // LibTorch 1.13 sends bf16 GEMMs to oneDNN when the CPU has avx512bw/vl/dq
  // (mkldnn_bf16_device_check) and MKLDNN is built in and not disabled.
  const bool avx512_core =
      features.avx512f && features.avx512bw && features.avx512vl && features.avx512dq;
  if (!avx512_core) {
    out.support = Bf16Support::kSlow;
    out.reason = absl::StrCat("slow: no AVX-512 (", features.FlagList(),
                              "), so LibTorch computes bf16 matmuls without oneDNN, emulated "
                              "and much slower than fp32");
  } else if (!mkldnn_usable) {
    out.support = Bf16Support::kSlow;
    out.reason =
        "slow: this LibTorch has oneDNN (MKLDNN) missing or disabled, so bf16 matmuls are "
        "emulated and much slower than fp32";
  } else if (capped_below_core) {
    out.support = Bf16Support::kSlow;
    out.reason = absl::StrCat("slow: ONEDNN_MAX_CPU_ISA=", onednn_max_isa,
                              " keeps oneDNN below AVX-512, so bf16 matmuls are emulated and much "
                              "slower than fp32");
  } else if (!(features.avx512_bf16 || features.amx_bf16)) {
    out.support = Bf16Support::kEmulated;
    out.reason =
        "emulated: AVX-512 without avx512_bf16 or amx_bf16, so oneDNN converts bf16 to fp32 in "
        "its kernels (no faster than fp32)";
  } else if (capped_below_bf16) {
    out.support = Bf16Support::kEmulated;
    out.reason = absl::StrCat("emulated: ONEDNN_MAX_CPU_ISA=", onednn_max_isa,
                              " keeps oneDNN from the CPU's bf16 instructions");
  } else {
    out.support = Bf16Support::kNative;
    out.reason = absl::StrCat("native (", features.amx_bf16 ? "amx_bf16" : "avx512_bf16", ")");
  }
  return out;
}

CpuBf16 CurrentBf16Support() {
  std::string cap;
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      cap = v;
      break;
    }
  }
  const bool mkldnn = at::hasMKLDNN() && at::globalContext().userEnabledMkldnn();
  return ClassifyBf16(DetectCpuFeatures(), mkldnn, cap);
}

std::string CpuBf16::Describe() const {
  return absl::StrCat("cpu: ", features.FlagList(), "; bf16: ", reason);
}

}  // namespace loom::precision
