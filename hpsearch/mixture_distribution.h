// The mixture of product distributions optuna 4.6's Parzen estimator builds (a port of
// optuna/samplers/_tpe/probability_distributions.py `_MixtureOfProductDistribution` and its
// batched kernels): each of K kernels (one per observation, plus the prior) is a product of
// one distribution per parameter, and the mixture weighs the kernels.
//
// Contract:
//   - A CategoricalKernels holds K rows of choice probabilities (row-major, K x n_choices); a
//     TruncNormKernels holds K means and standard deviations of normals truncated to
//     [low, high] (continuous when step == 0), or to [low - step/2, high + step/2] and
//     rounded to the grid low + k step (optuna's discrete kernels) when step > 0.
//   - Sample(rng, n) draws exactly what optuna draws, in its order: rng.choice(K, p=weights,
//     size=n) for the kernels, then rng.rand(n) for each categorical parameter in order, then
//     one rng.uniform(0, 1, size=(n_numerical, n)) for every numerical parameter together.
//     The result has one column per parameter (result[p][i]): choice indices, or values in
//     the kernels' (possibly log-transformed) space.
//   - LogPdf(x) (x[p][i], the same layout) is optuna's `log_pdf`: log sum_k w_k prod_p
//     f_kp(x_p), accumulated in optuna's order and with numpy's pairwise sums.
//
// Example:
//   MixtureOfProductDistribution mix{{0.5, 0.5}, {TruncNormKernels{{0.2, 0.5}, {0.3, 1.0},
//                                                                  0.0, 1.0, 0.0}}};
//   ASSIGN_OR_RETURN(auto samples, mix.Sample(rng, 24));
//   std::vector<double> log_density = mix.LogPdf(samples);
#ifndef LOOM_HPSEARCH_MIXTURE_DISTRIBUTION_H_
#define LOOM_HPSEARCH_MIXTURE_DISTRIBUTION_H_

#include <cstdint>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/numpy_random.h"

namespace loom::hpsearch {

struct CategoricalKernels {
  int64_t n_choices = 0;
  std::vector<double> weights;  // K x n_choices, row-major
};

struct TruncNormKernels {
  std::vector<double> mu;
  std::vector<double> sigma;
  double low = 0;
  double high = 0;
  double step = 0;  // 0: continuous
};

using BatchedKernels = std::variant<CategoricalKernels, TruncNormKernels>;

struct MixtureOfProductDistribution {
  std::vector<double> weights;  // K, summing to 1
  std::vector<BatchedKernels> distributions;

  absl::StatusOr<std::vector<std::vector<double>>> Sample(NumpyRandomState& rng,
                                                          int64_t batch_size) const;
  std::vector<double> LogPdf(const std::vector<std::vector<double>>& x) const;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_MIXTURE_DISTRIBUTION_H_
