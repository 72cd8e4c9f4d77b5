// optuna 4.6's RandomSampler (optuna/samplers/_random.py over optuna/_transform.py
// `_SearchSpaceTransform`): each parameter is one numpy rng.uniform over its transformed
// bounds, mapped back.
//
// Contract:
//   - RandomSampler(seed) draws from its own NumpyRandomState(seed) (optuna's
//     LazyRandomState(seed)); Sample(d) returns the internal value, drawing as optuna does:
//       float:              uniform(low, high), capped below high (nextafter);
//       float, log:         exp(uniform(log low, log high)), capped below high;
//       float, step:        uniform(low - step/2, high + step/2) rounded (half to even) to
//                           low + k step and clipped to [low, high];
//       int:                as the stepped float, then an integer;
//       int, log:           round(exp(uniform(log(low - 1/2), log(high + 1/2)))), clipped;
//       categorical:        one uniform(0, 1) per choice, the index of the largest.
//     A single-valued distribution (hpsearch/single_value.h) returns its value, drawing
//     nothing (optuna's Trial never asks the sampler for one).
//   - RngState() is {"random": draws}; RestoreRngState reseeds and skips that many draws.
//     A state without a non-negative integer "random" is InvalidArgument.
//   - RestoreDraws is the helper every sampler's RestoreRngState uses.
//
// Example:
//   RandomSampler sampler(42);
//   ASSIGN_OR_RETURN(double lr, sampler.Sample(lr_distribution));
#ifndef LOOM_HPSEARCH_RANDOM_SAMPLER_H_
#define LOOM_HPSEARCH_RANDOM_SAMPLER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/numpy_random.h"
#include "hpsearch/sampler.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(uint32_t seed) : rng_(seed) {}

  absl::StatusOr<double> SampleIndependent(const StudyView& study, const FrozenTrial& trial,
                                           const std::string& name,
                                           const Distribution& distribution) override {
    return Sample(distribution);
  }
  absl::StatusOr<double> Sample(const Distribution& distribution);

  nlohmann::json RngState() const override { return {{"random", rng_.draws()}}; }
  absl::Status RestoreRngState(const nlohmann::json& state) override;

  const NumpyRandomState& rng() const { return rng_; }

 private:
  NumpyRandomState rng_;
};

// Replaces `rng` by its seed advanced by state[key] draws. `sampler` names the sampler in
// the error.
absl::Status RestoreDraws(const nlohmann::json& state, const std::string& key,
                          const std::string& sampler, NumpyRandomState& rng);

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_RANDOM_SAMPLER_H_
