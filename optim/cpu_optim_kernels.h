// One-pass CPU optimizer kernels (for ZeRO-Offload): DeepSpeed's CPUAdam / CPUAdagrad idea in
// loom — each element's parameter, gradient and state read once and written once, vectorised for
// AVX-512 or AVX2 (chosen at run time from what the CPU has) with a scalar fallback, split over
// LibTorch's intra-op threads, and optionally writing the updated parameter's 16-bit copy
// (bf16 or fp16) in the same pass (DeepSpeed's step with fp16 params / adam_update_copy).
// Written by hand: no Debian package has a CPU Adam.
//
// The three ISA paths compile the same loop body with GCC target attributes (no per-ISA
// translation units, so no inline function of another ISA can leak into the baseline code);
// the scalar path keeps the compiler from vectorising it. The library is compiled without FMA
// contraction, so every path gives the same bits (an AVX2 and an AVX-512 machine agree), and
// results agree with torch's optimizers to float rounding (torch groups some operations
// differently).
//
// Arithmetic (double scalars rounded once to float, as torch forms them):
//   Adam(W)  g' = g + l2 * p  (Adam's L2 decay: l2 = weight_decay when !adamw_mode, else 0)
//            m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2
//            p = (p * decay  (decay = 1 - lr * weight_decay when adamw_mode, else 1)
//                 - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)), then HF's decay (below)
//            bc1 = 1 - b1^step, bc2 = 1 - b2^step; both 1 when !bias_correction.
//   Adagrad  g' = g + weight_decay * p;  sum += g'^2;
//            p -= clr * g' / (sqrt(sum) + eps),  clr = lr / (1 + (step - 1) * lr_decay).
//
// Example:
//   AdamStepScalars s = AdamScalarsFor(lr, 0.9, 0.999, 1e-8, 0.01, /*adamw_mode=*/true,
//                                      /*bias_correction=*/true, /*step=*/1);
//   AdamUpdate(s, p, g, m, v, n, HalfCopy{bf16_out, at::kBFloat16}, DetectCpuIsa());
#ifndef LOOM_OPTIM_CPU_OPTIM_KERNELS_H_
#define LOOM_OPTIM_CPU_OPTIM_KERNELS_H_

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

namespace loom::optim {

enum class CpuIsa { kScalar, kAvx2, kAvx512 };

// The widest path this CPU runs (AVX-512F, else AVX2 with FMA, else scalar).
CpuIsa DetectCpuIsa();
// The paths this CPU runs, narrowest first (always includes kScalar).
std::vector<CpuIsa> SupportedCpuIsas();
const char* CpuIsaName(CpuIsa isa);  // "scalar", "avx2", "avx512"

struct AdamStepScalars {
  float beta1 = 0.9f, one_minus_beta1 = 0.1f, beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float eps = 1e-8f;
  float l2 = 0;      // Adam's L2 weight decay (added to the gradient)
  float decay = 1;   // AdamW's decoupled decay factor (1 - lr * weight_decay)
  float neg_step_size = -1e-3f;  // -lr / bc1
  float bc2_sqrt = 1;            // sqrt(bc2)
  float decay_after = 0;         // HF AdamW's decay on the updated u: u + decay_after * u
};
AdamStepScalars AdamScalarsFor(double lr, double beta1, double beta2, double eps,
                               double weight_decay, bool adamw_mode, bool bias_correction,
                               int64_t step);

// transformers.AdamW (optim/hf_adamw.h): eps added to sqrt(v), the bias corrections folded into
// the step size, the decay applied after the update:
//   u = p - lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps);  p = u + (-lr * weight_decay) * u.
AdamStepScalars HfAdamScalarsFor(double lr, double beta1, double beta2, double eps,
                                 double weight_decay, bool correct_bias, int64_t step);

struct AdagradStepScalars {
  float neg_clr = -1e-2f;  // -lr / (1 + (step - 1) * lr_decay)
  float weight_decay = 0;
  float eps = 1e-10f;
};
AdagradStepScalars AdagradScalarsFor(double lr, double lr_decay, double weight_decay, double eps,
                                     int64_t step);

// Where the updated parameters' 16-bit copy goes: `out` holds n elements of `dtype` (kBFloat16,
// rounded to nearest even as c10::BFloat16 rounds, or kHalf); null `out`: no copy.
struct HalfCopy {
  void* out = nullptr;
  c10::ScalarType dtype = c10::ScalarType::BFloat16;
};

// A path the CPU lacks (`isa` wider than DetectCpuIsa()) runs as the widest it has.
// Adam: n elements of param, grad, exp_avg, exp_avg_sq (fp32, not overlapping).
void AdamUpdate(const AdamStepScalars& s, float* param, const float* grad, float* exp_avg,
                float* exp_avg_sq, int64_t n, HalfCopy half, CpuIsa isa);
// Adagrad: n elements of param, grad, sum.
void AdagradUpdate(const AdagradStepScalars& s, float* param, const float* grad, float* sum,
                   int64_t n, HalfCopy half, CpuIsa isa);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_CPU_OPTIM_KERNELS_H_
