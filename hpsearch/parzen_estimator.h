// optuna 4.6's Parzen estimator (optuna/samplers/_tpe/parzen_estimator.py `_ParzenEstimator`):
// the kernel density TPE fits to the good (or the bad) trials' parameters, one kernel per
// observation plus a prior kernel.
//
// Contract:
//   - Create(observations, space, parameters): observations[p] holds the internal values
//     (hpsearch/distribution.h) of parameter p of `space` for each observed trial (all of
//     equal length; log-scaled parameters are fitted in log space). Kernel weights are
//     parameters.weights(n) followed by prior_weight, normalized; a negative prior weight or
//     weights that are negative, all zero or not finite are InvalidArgument.
//   - Numerical kernels sit at the observations with optuna's univariate bandwidths (the
//     larger gap to a sorted neighbour, the endpoints ignored unless consider_endpoints,
//     clipped to [range / min(100, K + 1), range] with consider_magic_clip), the prior kernel
//     at the middle of the range with the range as bandwidth; ints and stepped floats are
//     discrete kernels, log ints continuous in log space. Categorical kernels put
//     prior_weight / K on every choice plus 1 on the observed one.
//   - Sample(rng, n) returns n internal values per parameter (samples[p][i]), drawing as
//     optuna does; LogPdf(samples) is the log density of each sample (a vector of n).
//
// Example:
//   ASSIGN_OR_RETURN(ParzenEstimator below, ParzenEstimator::Create({{0.1, 0.4}}, space, {}));
//   ASSIGN_OR_RETURN(auto candidates, below.Sample(rng, 24));
//   std::vector<double> log_l = below.LogPdf(candidates);
#ifndef LOOM_HPSEARCH_PARZEN_ESTIMATOR_H_
#define LOOM_HPSEARCH_PARZEN_ESTIMATOR_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/mixture_distribution.h"
#include "hpsearch/numpy_random.h"

namespace loom::hpsearch {

// optuna 4.6 `default_weights`: 1 for each of the first 25 observations from the newest,
// a linear ramp from 1/n for the older ones.
std::vector<double> DefaultTpeWeights(int64_t n);

struct ParzenEstimatorParameters {
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  bool multivariate = false;
  std::function<std::vector<double>(int64_t)> weights = DefaultTpeWeights;
};

class ParzenEstimator {
 public:
  static absl::StatusOr<ParzenEstimator> Create(
      const std::vector<std::vector<double>>& observations, const SearchSpace& space,
      const ParzenEstimatorParameters& parameters);

  absl::StatusOr<std::vector<std::vector<double>>> Sample(NumpyRandomState& rng,
                                                          int64_t size) const;
  std::vector<double> LogPdf(const std::vector<std::vector<double>>& samples) const;

  const MixtureOfProductDistribution& mixture() const { return mixture_; }

 private:
  ParzenEstimator(SearchSpace space, MixtureOfProductDistribution mixture)
      : space_(std::move(space)), mixture_(std::move(mixture)) {}
  std::vector<std::vector<double>> Transform(const std::vector<std::vector<double>>& x) const;

  SearchSpace space_;
  MixtureOfProductDistribution mixture_;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_PARZEN_ESTIMATOR_H_
