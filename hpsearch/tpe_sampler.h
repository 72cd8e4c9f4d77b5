// optuna 4.6's TPESampler with its defaults (optuna/samplers/_tpe/sampler.py): independent
// (univariate) sampling, single objective, no constraints, no constant liar.
//
// Contract:
//   - While fewer than n_startup_trials trials are COMPLETE or PRUNED, a parameter comes from
//     the sampler's own RandomSampler(seed) (hpsearch/random_sampler.h). After that, the
//     finished trials are split (SplitTrials) into the gamma(n) best and the rest, a Parzen
//     estimator (hpsearch/parzen_estimator.h) is fitted to each over the trials that have the
//     parameter, n_ei_candidates are drawn from the good one with the TPE's own
//     NumpyRandomState(seed) (a second generator with the same seed), and the candidate with
//     the largest log l(x) - log g(x) (the first of equals) is returned.
//   - An observation is re-expressed in the distribution asked for (external value of its
//     own distribution, then ToInternal), as optuna reads trial.params; one that does not fit
//     (a choice no longer offered) is InvalidArgument naming the trial.
//   - A single-valued distribution returns its value without drawing.
//   - SplitTrials is optuna's `_split_trials`: COMPLETE trials by value (stable; best first
//     for the study's direction), then PRUNED ones by (-last step, last intermediate value
//     signed for the direction, NaN last; no intermediate value ranks last), filling n_below;
//     each side in trial-number order. A COMPLETE trial without a value is
//     FailedPrecondition.
//   - RngState() is {"tpe": draws, "random": draws}; RestoreRngState restores both.
//
// Example:
//   TpeSampler sampler({.seed = 42});
//   ASSIGN_OR_RETURN(double x, sampler.SampleIndependent(view, trial, "x", distribution));
#ifndef LOOM_HPSEARCH_TPE_SAMPLER_H_
#define LOOM_HPSEARCH_TPE_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/numpy_random.h"
#include "hpsearch/parzen_estimator.h"
#include "hpsearch/random_sampler.h"
#include "hpsearch/sampler.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

// optuna 4.6 `default_gamma`: min(ceil(0.1 n), 25).
int64_t DefaultTpeGamma(int64_t n);

struct TpeOptions {
  uint32_t seed = 0;
  int64_t n_startup_trials = 10;
  int64_t n_ei_candidates = 24;
  std::function<int64_t(int64_t)> gamma = DefaultTpeGamma;
  ParzenEstimatorParameters parzen;
};

struct TrialSplit {
  std::vector<const FrozenTrial*> below;
  std::vector<const FrozenTrial*> above;
};

absl::StatusOr<TrialSplit> SplitTrials(Direction direction,
                                       const std::vector<const FrozenTrial*>& trials,
                                       int64_t n_below);

class TpeSampler final : public Sampler {
 public:
  explicit TpeSampler(const TpeOptions& options)
      : options_(options), rng_(options.seed), random_(options.seed) {}

  absl::StatusOr<double> SampleIndependent(const StudyView& study, const FrozenTrial& trial,
                                           const std::string& name,
                                           const Distribution& distribution) override;
  nlohmann::json RngState() const override;
  absl::Status RestoreRngState(const nlohmann::json& state) override;

 private:
  absl::StatusOr<double> SampleTpe(const StudyView& study,
                                   const std::vector<const FrozenTrial*>& trials,
                                   const std::string& name, const Distribution& distribution);

  TpeOptions options_;
  NumpyRandomState rng_;
  RandomSampler random_;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_TPE_SAMPLER_H_
