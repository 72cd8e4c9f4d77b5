// A study's trials as samplers and pruners see them (optuna 4.6 FrozenTrial, TrialState,
// StudyDirection), and the read-only view of a study they are given.
//
// Contract: plain data. Enum values are optuna's own (they are what its journal stores).
// `params` holds internal representations (hpsearch/distribution.h), keyed by name, with the
// distribution each was sampled from in `distributions`; `system_attrs` is a JSON object.
//
// Example:
//   StudyView view{Direction::kMinimize, trials};
//   for (const FrozenTrial& t : view.trials) if (t.state == TrialState::kComplete) ...
#ifndef LOOM_HPSEARCH_TRIAL_H_
#define LOOM_HPSEARCH_TRIAL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hpsearch/distribution.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

// optuna.trial.TrialState.
enum class TrialState { kRunning = 0, kComplete = 1, kPruned = 2, kFail = 3, kWaiting = 4 };
// optuna.study.StudyDirection.
enum class Direction { kNotSet = 0, kMinimize = 1, kMaximize = 2 };

const char* TrialStateName(TrialState state);    // "RUNNING", "COMPLETE", ...
const char* DirectionName(Direction direction);  // "minimize", "maximize"
inline bool IsFinished(TrialState s) {
  return s == TrialState::kComplete || s == TrialState::kPruned || s == TrialState::kFail;
}

struct FrozenTrial {
  int64_t number = 0;
  TrialState state = TrialState::kRunning;
  // The objective of a COMPLETE trial; a PRUNED one's last intermediate value (optuna's _tell).
  std::optional<double> value;
  std::map<std::string, double> params;
  std::map<std::string, Distribution> distributions;
  std::map<int64_t, double> intermediate_values;
  nlohmann::json system_attrs = nlohmann::json::object();
  nlohmann::json user_attrs = nlohmann::json::object();
  std::string datetime_start;     // ISO 8601 with microseconds, "" when unset
  std::string datetime_complete;  // "" until finished
  std::optional<int64_t> last_step() const {
    if (intermediate_values.empty()) return std::nullopt;
    return intermediate_values.rbegin()->first;
  }
};

// What a sampler or pruner reads: the study's direction and every trial in number order.
struct StudyView {
  Direction direction = Direction::kMinimize;
  const std::vector<FrozenTrial>& trials;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_TRIAL_H_
