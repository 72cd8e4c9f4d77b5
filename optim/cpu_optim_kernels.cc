#include "optim/cpu_optim_kernels.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>

namespace loom::optim {
namespace {

constexpr int64_t kGrain = 32768;  // elements per thread chunk (a few hundred KiB per stream)

enum class Out { kNone, kBf16, kFp16 };

// Round to nearest even as c10::BFloat16 does (NaN -> the canonical quiet NaN), written so
// that the compiler vectorises it.
inline __attribute__((always_inline)) uint16_t ToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return f != f ? uint16_t{0x7FC0} : static_cast<uint16_t>(rounded);
}

template <Out kOut>
inline __attribute__((always_inline)) void Store16(void* out, int64_t i, float value) {
  if constexpr (kOut == Out::kBf16) {
    static_cast<uint16_t*>(out)[i] = ToBf16Bits(value);
  } else if constexpr (kOut == Out::kFp16) {
    static_cast<c10::Half*>(out)[i] = c10::Half(value);
  }
}

// The scalar path: an empty asm statement per element keeps GCC from vectorising the loop.
template <bool kScalar>
inline __attribute__((always_inline)) void NoVectorise() {
  if constexpr (kScalar) asm volatile("");
}

// kL2: whether the gradient takes an L2 term (only when its factor is non-zero, as torch: an
// infinite parameter times a zero factor would otherwise turn into NaN).
template <Out kOut, bool kScalar, bool kL2>
inline __attribute__((always_inline)) void AdamBody(const AdamStepScalars& s,
                                                    float* __restrict__ p,
                                                    const float* __restrict__ g,
                                                    float* __restrict__ m, float* __restrict__ v,
                                                    int64_t n, void* __restrict__ out) {
  for (int64_t i = 0; i < n; ++i) {
    NoVectorise<kScalar>();
    const float pi = p[i];
    const float gi = kL2 ? g[i] + s.l2 * pi : g[i];
    const float mi = m[i] * s.beta1 + gi * s.one_minus_beta1;
    const float vi = v[i] * s.beta2 + gi * gi * s.one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    const float u = pi * s.decay + s.neg_step_size * (mi / denom);
    const float updated = u + s.decay_after * u;
    p[i] = updated;
    Store16<kOut>(out, i, updated);
  }
}

template <Out kOut, bool kScalar, bool kL2>
inline __attribute__((always_inline)) void AdagradBody(const AdagradStepScalars& s,
                                                       float* __restrict__ p,
                                                       const float* __restrict__ g,
                                                       float* __restrict__ sum, int64_t n,
                                                       void* __restrict__ out) {
  for (int64_t i = 0; i < n; ++i) {
    NoVectorise<kScalar>();
    const float pi = p[i];
    const float gi = kL2 ? g[i] + s.weight_decay * pi : g[i];
    const float si = sum[i] + gi * gi;
    sum[i] = si;
    const float updated = pi + s.neg_clr * (gi / (std::sqrt(si) + s.eps));
    p[i] = updated;
    Store16<kOut>(out, i, updated);
  }
}

// One entry point per (ISA, output) pair; the body is inlined into each with its target.
#define LOOM_CPU_OPTIM_KERNELS(SUFFIX, ATTR, SCALAR)                                         \
  template <Out kOut, bool kL2>                                                             \
  ATTR void Adam##SUFFIX(const AdamStepScalars& s, float* p, const float* g, float* m,      \
                         float* v, int64_t n, void* out) {                                  \
    AdamBody<kOut, SCALAR, kL2>(s, p, g, m, v, n, out);                                     \
  }                                                                                         \
  template <Out kOut, bool kL2>                                                             \
  ATTR void Adagrad##SUFFIX(const AdagradStepScalars& s, float* p, const float* g,          \
                            float* sum, int64_t n, void* out) {                             \
    AdagradBody<kOut, SCALAR, kL2>(s, p, g, sum, n, out);                                   \
  }

LOOM_CPU_OPTIM_KERNELS(Scalar, , true)
LOOM_CPU_OPTIM_KERNELS(Avx2, __attribute__((target("avx2,fma"))), false)
LOOM_CPU_OPTIM_KERNELS(Avx512, __attribute__((target("avx512f,avx512bw,avx512vl,fma"))), false)
#undef LOOM_CPU_OPTIM_KERNELS

Out OutOf(const HalfCopy& half) {
  if (half.out == nullptr) return Out::kNone;
  return half.dtype == c10::ScalarType::Half ? Out::kFp16 : Out::kBf16;
}

template <typename Fn>
void Split(int64_t n, const Fn& fn) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) { fn(begin, end); });
}

// A path the CPU lacks is lowered to the widest it has (never an illegal instruction).
int Usable(CpuIsa isa) {
  static const CpuIsa best = DetectCpuIsa();
  return static_cast<int>(isa) < static_cast<int>(best) ? static_cast<int>(isa)
                                                        : static_cast<int>(best);
}

void* Offset(const HalfCopy& half, int64_t begin) {
  return half.out == nullptr ? nullptr : static_cast<char*>(half.out) + begin * 2;
}

}  // namespace

CpuIsa DetectCpuIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return CpuIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
  return CpuIsa::kScalar;
}

std::vector<CpuIsa> SupportedCpuIsas() {
  std::vector<CpuIsa> out = {CpuIsa::kScalar};
  const CpuIsa best = DetectCpuIsa();
  if (best == CpuIsa::kAvx2 || best == CpuIsa::kAvx512) out.push_back(CpuIsa::kAvx2);
  if (best == CpuIsa::kAvx512) out.push_back(CpuIsa::kAvx512);
  return out;
}

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

AdamStepScalars AdamScalarsFor(double lr, double beta1, double beta2, double eps,
                               double weight_decay, bool adamw_mode, bool bias_correction,
                               int64_t step) {
  const double bc1 = bias_correction ? 1 - std::pow(beta1, static_cast<double>(step)) : 1.0;
  const double bc2 = bias_correction ? 1 - std::pow(beta2, static_cast<double>(step)) : 1.0;
  AdamStepScalars s;
  s.beta1 = static_cast<float>(beta1);
  s.one_minus_beta1 = static_cast<float>(1 - beta1);
  s.beta2 = static_cast<float>(beta2);
  s.one_minus_beta2 = static_cast<float>(1 - beta2);
  s.eps = static_cast<float>(eps);
  s.l2 = adamw_mode ? 0.0f : static_cast<float>(weight_decay);
  s.decay = static_cast<float>(adamw_mode && weight_decay != 0 ? 1 - lr * weight_decay : 1.0);
  s.neg_step_size = static_cast<float>(-(lr / bc1));
  s.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  return s;
}

AdamStepScalars HfAdamScalarsFor(double lr, double beta1, double beta2, double eps,
                                 double weight_decay, bool correct_bias, int64_t step) {
  AdamStepScalars s = AdamScalarsFor(lr, beta1, beta2, eps, 0.0, true, false, step);
  double step_size = lr;
  if (correct_bias) {
    const double t = static_cast<double>(step);
    step_size = lr * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
  }
  s.neg_step_size = static_cast<float>(-step_size);
  s.decay_after = static_cast<float>(weight_decay > 0 ? -lr * weight_decay : 0.0);
  return s;
}

AdagradStepScalars AdagradScalarsFor(double lr, double lr_decay, double weight_decay, double eps,
                                     int64_t step) {
  AdagradStepScalars s;
  s.neg_clr = static_cast<float>(-(lr / (1 + static_cast<double>(step - 1) * lr_decay)));
  s.weight_decay = static_cast<float>(weight_decay);
  s.eps = static_cast<float>(eps);
  return s;
}

void AdamUpdate(const AdamStepScalars& s, float* param, const float* grad, float* exp_avg,
                float* exp_avg_sq, int64_t n, HalfCopy half, CpuIsa isa) {
  using Kernel = void (*)(const AdamStepScalars&, float*, const float*, float*, float*, int64_t,
                          void*);
#define LOOM_ROW(ISA)                                                                   \
  {{Adam##ISA<Out::kNone, false>, Adam##ISA<Out::kNone, true>},                         \
   {Adam##ISA<Out::kBf16, false>, Adam##ISA<Out::kBf16, true>},                         \
   {Adam##ISA<Out::kFp16, false>, Adam##ISA<Out::kFp16, true>}}
  static constexpr Kernel kTable[3][3][2] = {LOOM_ROW(Scalar), LOOM_ROW(Avx2), LOOM_ROW(Avx512)};
#undef LOOM_ROW
  const Kernel kernel =
      kTable[Usable(isa)][static_cast<int>(OutOf(half))][s.l2 != 0 ? 1 : 0];
  Split(n, [&](int64_t b, int64_t e) {
    kernel(s, param + b, grad + b, exp_avg + b, exp_avg_sq + b, e - b, Offset(half, b));
  });
}

void AdagradUpdate(const AdagradStepScalars& s, float* param, const float* grad, float* sum,
                   int64_t n, HalfCopy half, CpuIsa isa) {
  using Kernel =
      void (*)(const AdagradStepScalars&, float*, const float*, float*, int64_t, void*);
#define LOOM_ROW(ISA)                                                                   \
  {{Adagrad##ISA<Out::kNone, false>, Adagrad##ISA<Out::kNone, true>},                   \
   {Adagrad##ISA<Out::kBf16, false>, Adagrad##ISA<Out::kBf16, true>},                   \
   {Adagrad##ISA<Out::kFp16, false>, Adagrad##ISA<Out::kFp16, true>}}
  static constexpr Kernel kTable[3][3][2] = {LOOM_ROW(Scalar), LOOM_ROW(Avx2), LOOM_ROW(Avx512)};
#undef LOOM_ROW
  const Kernel kernel =
      kTable[Usable(isa)][static_cast<int>(OutOf(half))][s.weight_decay != 0 ? 1 : 0];
  Split(n, [&](int64_t b, int64_t e) {
    kernel(s, param + b, grad + b, sum + b, e - b, Offset(half, b));
  });
}

}  // namespace loom::optim
