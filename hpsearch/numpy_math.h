// The few numpy 1.24 array operations optuna 4.6's TPE sampler depends on, bit for bit:
// sums (numpy's pairwise summation), argsort (numpy's introsort, whose order among equal
// values the Parzen estimator's bandwidths depend on), linspace, argmax, round and clip.
// Hand-written from numpy's C sources at v1.24.2 (umath/loops_utils.h.src `pairwise_sum`,
// npysort/quicksort.cpp `aquicksort_`, npysort/heapsort.cpp `aheapsort_`,
// core/function_base.py `linspace`, umath/clip.cpp).
//
// Contract:
//   - Sum(x) is `numpy.sum(x)` of a contiguous float64 vector (0.0 plus the pairwise sum;
//     also what `.sum(axis=-1)` gives for each row of a C-ordered matrix).
//   - ArgSort(v) is `numpy.argsort(v)` (kind "quicksort"): NaNs last, equal values in the
//     order numpy's unstable partitioning leaves them.
//   - Linspace(start, stop, num) is `numpy.linspace(start, stop, num)`.
//   - ArgMax(v) is `numpy.argmax(v)`: the first maximum, or the first NaN if there is one;
//     -1 for an empty vector. Max(v) is `numpy.max` (NaN when any value is NaN).
//   - Round is `numpy.round` (half to even); Clip is `numpy.clip` for one value (NaN stays).
//
// Example:
//   std::vector<int64_t> order = numpy::ArgSort({0.5, 0.1, 0.5});   // {1, 0, 2}
//   double total = numpy::Sum(weights);
#ifndef LOOM_HPSEARCH_NUMPY_MATH_H_
#define LOOM_HPSEARCH_NUMPY_MATH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::hpsearch::numpy {

double Sum(const double* x, size_t n);
inline double Sum(const std::vector<double>& x) { return Sum(x.data(), x.size()); }

std::vector<int64_t> ArgSort(const std::vector<double>& v);

std::vector<double> Linspace(double start, double stop, int64_t num);

int64_t ArgMax(const std::vector<double>& v);
double Max(const double* x, size_t n);

double Round(double x);
double Clip(double x, double low, double high);

}  // namespace loom::hpsearch::numpy

#endif  // LOOM_HPSEARCH_NUMPY_MATH_H_
