#include "hpsearch/median_pruner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::hpsearch {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

absl::Status Invalid(const char* what, const char* option, double got) {
  return absl::InvalidArgumentError(
      absl::StrCat("median pruner: ", what, ", but got ", option, "=", got, "."));
}

// optuna 4.6 `_is_first_in_interval_step`.
bool IsFirstInIntervalStep(int64_t step, const FrozenTrial& trial, int64_t n_warmup_steps,
                           int64_t interval_steps) {
  const int64_t offset = step - n_warmup_steps;
  const int64_t floor_div =
      offset >= 0 ? offset / interval_steps : -((-offset + interval_steps - 1) / interval_steps);
  const int64_t nearest_lower_pruning_step = floor_div * interval_steps + n_warmup_steps;
  int64_t second_last_step = -1;
  for (const auto& [s, value] : trial.intermediate_values) {
    if (s > second_last_step && s != step) second_last_step = s;
  }
  return second_last_step < nearest_lower_pruning_step;
}

// numpy's nanmax / nanmin over the trial's intermediate values (NaN when all are NaN).
double BestIntermediate(const FrozenTrial& trial, Direction direction) {
  double best = kNaN;
  for (const auto& [step, v] : trial.intermediate_values) {
    if (std::isnan(v)) continue;
    if (std::isnan(best) || (direction == Direction::kMaximize ? v > best : v < best)) best = v;
  }
  return best;
}

}  // namespace

double NanPercentile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
               values.end());
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const int64_t n = static_cast<int64_t>(values.size());
  const double virtual_index = static_cast<double>(n - 1) * (q / 100);
  double previous = std::floor(virtual_index);
  double next = previous + 1;
  if (virtual_index >= static_cast<double>(n - 1)) previous = next = -1;
  if (virtual_index < 0) previous = next = 0;
  const double gamma = virtual_index - previous;
  auto at = [&](double index) { return values[index < 0 ? n - 1 : static_cast<int64_t>(index)]; };
  const double a = at(previous);
  const double b = at(next);
  // numpy's _lerp.
  const double diff = b - a;
  return gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;
}

absl::StatusOr<MedianPruner> MedianPruner::Create(const MedianPrunerOptions& options) {
  if (!(options.percentile >= 0.0 && options.percentile <= 100)) {
    return Invalid("percentile must be between 0 and 100 inclusive", "percentile",
                   options.percentile);
  }
  if (options.n_startup_trials < 0) {
    return Invalid("the number of startup trials cannot be negative", "n_startup_trials",
                   options.n_startup_trials);
  }
  if (options.n_warmup_steps < 0) {
    return Invalid("the number of warmup steps cannot be negative", "n_warmup_steps",
                   options.n_warmup_steps);
  }
  if (options.interval_steps < 1) {
    return Invalid("pruning interval steps must be at least 1", "interval_steps",
                   options.interval_steps);
  }
  if (options.n_min_trials < 1) {
    return Invalid("the number of trials for pruning must be at least 1", "n_min_trials",
                   options.n_min_trials);
  }
  return MedianPruner(options);
}

bool MedianPruner::Prune(const StudyView& study, const FrozenTrial& trial) const {
  std::vector<const FrozenTrial*> completed;
  for (const FrozenTrial& t : study.trials) {
    if (t.state == TrialState::kComplete) completed.push_back(&t);
  }
  const int64_t n_trials = static_cast<int64_t>(completed.size());
  if (n_trials == 0 || n_trials < options_.n_startup_trials) return false;
  const std::optional<int64_t> step = trial.last_step();
  if (!step || *step < options_.n_warmup_steps) return false;
  if (!IsFirstInIntervalStep(*step, trial, options_.n_warmup_steps, options_.interval_steps)) {
    return false;
  }
  const Direction direction = study.direction;
  const double best = BestIntermediate(trial, direction);
  if (std::isnan(best)) return true;

  std::vector<double> at_step;
  for (const FrozenTrial* t : completed) {
    const auto it = t->intermediate_values.find(*step);
    if (it != t->intermediate_values.end()) at_step.push_back(it->second);
  }
  if (static_cast<int64_t>(at_step.size()) < options_.n_min_trials) return false;
  const double percentile =
      direction == Direction::kMaximize ? 100 - options_.percentile : options_.percentile;
  const double p = NanPercentile(std::move(at_step), percentile);
  if (std::isnan(p)) return false;
  return direction == Direction::kMaximize ? best < p : best > p;
}

}  // namespace loom::hpsearch
