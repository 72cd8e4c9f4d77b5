#include "hpsearch/trial.h"

namespace loom::hpsearch {

const char* TrialStateName(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return "RUNNING";
    case TrialState::kComplete:
      return "COMPLETE";
    case TrialState::kPruned:
      return "PRUNED";
    case TrialState::kFail:
      return "FAIL";
    case TrialState::kWaiting:
      return "WAITING";
  }
  return "UNKNOWN";
}

const char* DirectionName(Direction direction) {
  switch (direction) {
    case Direction::kMinimize:
      return "minimize";
    case Direction::kMaximize:
      return "maximize";
    case Direction::kNotSet:
      break;
  }
  return "not_set";
}

}  // namespace loom::hpsearch
