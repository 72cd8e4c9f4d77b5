// Sequential in-memory studies over //hpsearch's samplers and median pruner, the way optuna
// 4.6's study.optimize runs them one trial at a time, on synthetic objectives that
// optuna_parity.py defines identically in Python (testonly).
//
// Contract:
//   - RunSequentialStudy(config): for k = 0, 1, ..., n_trials - 1: trial k is created
//     RUNNING, the sampler's BeforeTrial runs, each parameter is sampled in the space's order,
//     the objective is evaluated (maximize studies return its negation) and the trial is told
//     COMPLETE with the value, or PRUNED (see `prune`), with its intermediate values; the study
//     stops early when the sampler reports ExhaustedAfter (grid search).
//   - Objectives (by name): "quadratic_1d" (x - 1.7)^2; "mixed_3d" (log10 lr + 3)^2 +
//     0.1 (layers - 4)^2 + {relu 0.5, tanh 0, gelu 0.25}[act]; "all_kinds" and "grid_4d"
//     (every kind of distribution; see the .cc).
//     Each is 0 at its optimum. ObjectiveValue evaluates one on a trial's parameters.
//   - prune "": none. "schedule": trial k reports 5 steps (objective + 1/(step + 1)) and is
//     pruned after step k % 5 when k % 3 == 2 (its last report NaN when k % 7 == 6), or
//     before any report when k % 11 == 10. "median": 8 steps of a decaying curve, pruned when
//     hpsearch's MedianPruner (optuna's defaults) says so.
//   - TrialsToJson writes the trials as optuna_parity.py reads them: number, state, value,
//     external params, intermediate values ([[step, value], ...], NaN as null), grid_id and
//     search_space when present.
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<FrozenTrial> trials, RunSequentialStudy(config));
//   nlohmann::json out = TrialsToJson(trials, config.space);
#ifndef LOOM_TESTS_HPSEARCH_SEQUENTIAL_STUDY_H_
#define LOOM_TESTS_HPSEARCH_SEQUENTIAL_STUDY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch::testing {

struct StudyConfig {
  std::string sampler = "tpe";  // a registered backend
  uint32_t seed = 0;
  Direction direction = Direction::kMinimize;
  std::string objective = "quadratic_1d";
  int64_t n_trials = 30;
  SearchSpace space;
  std::string prune;  // "", "schedule" or "median"
};

// The search space each objective is defined on (as a JSON object of abbreviated
// distributions, hpsearch/distribution.h's ParseSearchSpace form).
absl::StatusOr<SearchSpace> ObjectiveSpace(const std::string& objective);

absl::StatusOr<double> ObjectiveValue(const std::string& objective, const FrozenTrial& trial,
                                      const SearchSpace& space);

absl::StatusOr<std::vector<FrozenTrial>> RunSequentialStudy(const StudyConfig& config);

nlohmann::json TrialsToJson(const std::vector<FrozenTrial>& trials, const SearchSpace& space);

}  // namespace loom::hpsearch::testing

#endif  // LOOM_TESTS_HPSEARCH_SEQUENTIAL_STUDY_H_
