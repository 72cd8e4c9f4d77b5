// The sampler interface (optuna 4.6 BaseSampler's independent sampling) and the registry of
// the built-in backends by name: "tpe" (TPESampler), "random" (RandomSampler), "grid"
// (GridSampler). Each implementation draws its random numbers exactly as optuna does from a
// numpy RandomState seeded the same way, so a seeded loom search samples what a seeded optuna
// study samples, trial by trial.
//
// Contract:
//   - BeforeTrial(study, trial) runs once per new trial before its parameters are sampled
//     (optuna's before_trial; the grid sampler records "grid_id" and "search_space" in the
//     trial's system_attrs there).
//   - SampleIndependent returns the internal representation of `name`'s value for `trial`,
//     given every trial of the study (the new one included, RUNNING).
//   - ExhaustedAfter(study, trial): the study should stop after `trial` (optuna's study.stop()
//     from after_trial; only the grid sampler says so).
//   - RngState / RestoreRngState: how far each of the sampler's generators has advanced (a JSON
//     object of draw counts), so that a study resumed from its journal continues the same
//     random streams. RestoreRngState on a fresh sampler reproduces the exact state.
//   - CreateSampler(name, options) builds a registered backend; an unknown name is
//     InvalidArgument listing the registered ones.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Sampler> sampler,
//                    CreateSampler("tpe", {.seed = 42, .space = space}));
//   RETURN_IF_ERROR(sampler->BeforeTrial(view, trial));
//   ASSIGN_OR_RETURN(double lr, sampler->SampleIndependent(view, trial, "learning_rate", dist));
#ifndef LOOM_HPSEARCH_SAMPLER_H_
#define LOOM_HPSEARCH_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

struct SamplerOptions {
  // optuna's `seed` argument (numpy RandomState(seed); optuna's GridSampler uses `seed or 0`).
  uint32_t seed = 0;
  // The whole search space (the grid sampler enumerates it; others may ignore it).
  SearchSpace space;
  // TPESampler's arguments (optuna 4.6 defaults).
  int64_t n_startup_trials = 10;
  int64_t n_ei_candidates = 24;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual absl::Status BeforeTrial(const StudyView& study, FrozenTrial& trial) {
    return absl::OkStatus();
  }
  virtual absl::StatusOr<double> SampleIndependent(const StudyView& study,
                                                   const FrozenTrial& trial,
                                                   const std::string& name,
                                                   const Distribution& distribution) = 0;
  virtual bool ExhaustedAfter(const StudyView& study, const FrozenTrial& trial) const {
    return false;
  }
  virtual nlohmann::json RngState() const = 0;
  virtual absl::Status RestoreRngState(const nlohmann::json& state) = 0;
};

using SamplerFactory =
    std::function<absl::StatusOr<std::unique_ptr<Sampler>>(const SamplerOptions&)>;

// Registers `factory` under `name` (at static initialisation: see sampler_registry.cc).
bool RegisterSampler(const std::string& name, SamplerFactory factory);
std::vector<std::string> RegisteredSamplers();  // sorted
absl::StatusOr<std::unique_ptr<Sampler>> CreateSampler(const std::string& name,
                                                       const SamplerOptions& options);

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_SAMPLER_H_
