// The truncated normal distribution as optuna 4.6's TPE computes it (a port of
// optuna/samplers/_tpe/_truncnorm.py, itself derived from SciPy, and of _erf.py): the
// percent point function, random variates from given uniforms, the log density and the log of
// the Gaussian mass between two standardized bounds.
//
// Contract:
//   - Every function takes and returns vectors because optuna's results depend on how values
//     are batched, and these reproduce optuna's batches when called with the same vectors:
//     NdtriExp's Newton iterations run until every element of its batch has converged (Ppf
//     batches the elements with a < 0 together and the others together), and Erf switches from
//     math.erf to optuna's polynomial approximation at 2000 elements (LogGaussMass passes it
//     the elements whose interval straddles 0).
//   - Where optuna calls Python's `math` (erf, erfc, log in `_log_ndtr_single`) or numpy's
//     npymath scalars (logaddexp), these call the C library, as CPython and numpy do; where
//     optuna calls numpy's vectorized np.exp / np.log / np.log1p / np.expm1, these call
//     hpsearch/numpy_svml.h, which computes them as numpy does on this CPU. The results are
//     optuna's bit for bit.
//   - Ppf(q, a, b): the value c with ndtr(c) = ndtr(a) + q (ndtr(b) - ndtr(a)); NaN where
//     a == b, b where q == 1, a where q == 0. Rvs draws a.size() uniforms from `rng`
//     (numpy's rng.uniform(0, 1, size)) and returns Ppf(u, a, b) * scale + loc.
//   - LogPdf(x, a, b, loc, scale): x holds rows of n values (row-major, n = a.size()); the
//     result has the same shape: log density of x[r][i] under the normal (loc[i], scale[i])
//     truncated to the standardized [a[i], b[i]]; -inf outside, NaN where a == b. The mass is
//     computed once over (a, b), as optuna does.
//
// Example:
//   std::vector<double> x = truncnorm::Rvs({-1.0}, {2.0}, {0.5}, {0.3}, rng);
//   std::vector<double> lp = truncnorm::LogPdf(x, {-1.0}, {2.0}, {0.5}, {0.3});
#ifndef LOOM_HPSEARCH_TRUNCNORM_H_
#define LOOM_HPSEARCH_TRUNCNORM_H_

#include <vector>

#include "hpsearch/numpy_random.h"

namespace loom::hpsearch::truncnorm {

// optuna's `erf` over one array (math.erf per element below 2000 elements).
std::vector<double> Erf(const std::vector<double>& x);
// optuna's `_ndtr_single` and `_log_ndtr_single`: Phi(a) and log Phi(a).
double Ndtr(double a);
double LogNdtr(double a);
// optuna's `_log_gauss_mass`: log(Phi(b) - Phi(a)) elementwise, one batch.
std::vector<double> LogGaussMass(const std::vector<double>& a, const std::vector<double>& b);
// optuna's `_ndtri_exp`: x with log Phi(x) = y, one batch.
std::vector<double> NdtriExp(const std::vector<double>& y);
std::vector<double> Ppf(const std::vector<double>& q, const std::vector<double>& a,
                        const std::vector<double>& b);
std::vector<double> Rvs(const std::vector<double>& a, const std::vector<double>& b,
                        const std::vector<double>& loc, const std::vector<double>& scale,
                        NumpyRandomState& rng);
std::vector<double> LogPdf(const std::vector<double>& x, const std::vector<double>& a,
                           const std::vector<double>& b, const std::vector<double>& loc,
                           const std::vector<double>& scale);

}  // namespace loom::hpsearch::truncnorm

#endif  // LOOM_HPSEARCH_TRUNCNORM_H_
