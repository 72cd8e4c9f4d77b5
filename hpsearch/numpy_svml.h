// numpy 1.24's float64 `np.exp`, `np.log`, `np.log1p` and `np.expm1` as numpy computes them
// on this CPU, so that optuna's TPE arithmetic (log densities of Parzen kernels, their
// log-sum-exp, log-scaled parameters, truncated normals) rounds exactly as it does in Python. That
// matters more than it seems: the categorical kernels give ties in l(x) / g(x) that only rounding
// breaks, and TPE takes the first maximum.
//
// Contract:
//   - On x86-64 CPUs with numpy's "AVX512_SKX" feature set (AVX-512 F, CD, BW, DQ and VL), a
//     Linux x86-64 numpy 1.24 evaluates these ufuncs with Intel's SVML (`__svml_exp8`,
//     `__svml_log8`, `__svml_log1p8`, `__svml_expm18`: the "la" variants numpy vendors from
//     github.com/numpy/SVML at 1c5260a, BSD-3-Clause). These follow those routines instruction
//     for instruction with AVX-512 intrinsics (the same reciprocal approximation, table
//     lookups, fused multiply-adds and rounding modes), so they return numpy's bits (checked
//     against numpy on 2.3 million arguments). Arguments SVML hands to its scalar "rare" path
//     (|x| >= 707.7 for exp and expm1; zero, negative, infinite for log; log1p's x <= -1 and
//     infinities) use the C library, which agrees on every special value and may differ in the
//     last place of exp(x) and expm1(x) for x >= 707.7.
//   - Elsewhere (no AVX-512, or another architecture) numpy calls the C library, and so do
//     these. (numpy's own AVX-512F exp/log for CPUs with AVX-512 F but not the SKX set, the
//     Xeon Phi, is not reproduced: there these use the C library too.)
//   - UsesSvml() says which one this process uses.
//
// Example:
//   double w = numpy::Log(0.875);   // == numpy.log(0.875) on this machine
#ifndef LOOM_HPSEARCH_NUMPY_SVML_H_
#define LOOM_HPSEARCH_NUMPY_SVML_H_

namespace loom::hpsearch::numpy {

double Exp(double x);
double Log(double x);
double Log1p(double x);
double Expm1(double x);
bool UsesSvml();

}  // namespace loom::hpsearch::numpy

#endif  // LOOM_HPSEARCH_NUMPY_SVML_H_
