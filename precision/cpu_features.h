// What this CPU can do for bf16, as LibTorch 1.13 / oneDNN will use it, decided at run time
// (loom's machines vary: AVX-512 with native bf16 on one, AVX2 only on the next).
//
// Contract:
//   - DetectCpuFeatures() reads CPUID (leaf 1, leaf 7 subleaves 0 and 1) and XCR0 (the
//     registers the OS saves): avx2, avx512f/bw/vl/dq, avx512_bf16, amx_bf16. An
//     instruction set the OS does not enable (XCR0) counts as absent.
//   - Bf16Support(features, mkldnn_usable, onednn_max_isa) classifies bf16 matmul speed:
//       kNative     avx512_bf16 or amx_bf16 and oneDNN usable: bf16 GEMMs run on bf16
//                   instructions (measured ~3x fp32 on Zen 4);
//       kEmulated   AVX-512 (bw/vl/dq) without bf16 instructions: oneDNN converts to fp32
//                   inside its kernels (no faster than fp32);
//       kSlow       anything else: LibTorch falls back to a scalar bf16 GEMM (measured 35x
//                   slower than fp32 on Zen 3).
//     `onednn_max_isa` is ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA (empty when unset); a cap
//     below AVX512_CORE_BF16 takes the native instructions away, below AVX512_CORE the
//     oneDNN path.
//   - CurrentBf16Support() applies it to this process (CPUID, at::hasMKLDNN() and
//     at::globalContext().userEnabledMkldnn(), the environment).
//   - Describe() gives the one line benchmarks and warnings print:
//     "cpu: avx2 avx512f avx512bw avx512vl avx512dq avx512_bf16; bf16: native (avx512_bf16)".
//
// Example:
//   const CpuBf16 bf16 = CurrentBf16Support();
//   if (bf16.support != Bf16Support::kNative) LOG(WARNING) << bf16.reason;
#ifndef LOOM_PRECISION_CPU_FEATURES_H_
#define LOOM_PRECISION_CPU_FEATURES_H_

#include <string>

namespace loom::precision {

struct CpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;

  // The flags that are set, in /proc/cpuinfo's spelling, space-separated.
  std::string FlagList() const;
};

CpuFeatures DetectCpuFeatures();

enum class Bf16Support { kNative, kEmulated, kSlow };
const char* Bf16SupportName(Bf16Support support);  // "native", "emulated", "slow"

struct CpuBf16 {
  CpuFeatures features;
  Bf16Support support = Bf16Support::kSlow;
  // Why, in words: "native (avx512_bf16)", "slow: no AVX-512 (avx2 only) ..." .
  std::string reason;

  std::string Describe() const;  // "cpu: <flags>; bf16: <reason>"
};

CpuBf16 ClassifyBf16(const CpuFeatures& features, bool mkldnn_usable,
                     const std::string& onednn_max_isa);

CpuBf16 CurrentBf16Support();

}  // namespace loom::precision

#endif  // LOOM_PRECISION_CPU_FEATURES_H_
