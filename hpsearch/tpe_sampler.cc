#include "hpsearch/tpe_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hpsearch/numpy_math.h"
#include "hpsearch/single_value.h"

namespace loom::hpsearch {
namespace {

// optuna 4.6 `_get_pruned_trial_score`.
std::pair<int64_t, double> PrunedScore(const FrozenTrial& trial, Direction direction) {
  if (trial.intermediate_values.empty()) return {1, 0.0};
  const auto& [step, value] = *trial.intermediate_values.rbegin();
  if (std::isnan(value)) return {-step, std::numeric_limits<double>::infinity()};
  return {-step, direction == Direction::kMinimize ? value : -value};
}

bool ByNumber(const FrozenTrial* a, const FrozenTrial* b) { return a->number < b->number; }

// The values of `name` in `trials` that have it, as `distribution`'s internal values.
absl::StatusOr<std::vector<double>> Observations(const std::vector<const FrozenTrial*>& trials,
                                                 const std::string& name,
                                                 const Distribution& distribution) {
  std::vector<double> out;
  for (const FrozenTrial* t : trials) {
    const auto param = t->params.find(name);
    if (param == t->params.end()) continue;
    const auto own = t->distributions.find(name);
    if (own == t->distributions.end()) {
      out.push_back(param->second);
      continue;
    }
    ASSIGN_OR_RETURN(double v, ToInternal(distribution, ToExternal(own->second, param->second)),
                     absl::StrCat("TPE: trial ", t->number, "'s \"", name,
                                  "\" does not fit the distribution asked for now"));
    out.push_back(v);
  }
  return out;
}

}  // namespace

int64_t DefaultTpeGamma(int64_t n) {
  return std::min<int64_t>(static_cast<int64_t>(std::ceil(0.1 * static_cast<double>(n))), 25);
}

absl::StatusOr<TrialSplit> SplitTrials(Direction direction,
                                       const std::vector<const FrozenTrial*>& trials,
                                       int64_t n_below) {
  std::vector<const FrozenTrial*> complete, pruned, running;
  for (const FrozenTrial* t : trials) {
    if (t->state == TrialState::kRunning) {
      running.push_back(t);
    } else if (t->state == TrialState::kComplete) {
      if (!t->value) {
        return absl::FailedPreconditionError(absl::StrCat(
            "TPE: COMPLETE trial ", t->number, " has no value; tell the study its objective"));
      }
      complete.push_back(t);
    } else if (t->state == TrialState::kPruned) {
      pruned.push_back(t);
    }
  }
  std::stable_sort(
      complete.begin(), complete.end(), [direction](const FrozenTrial* a, const FrozenTrial* b) {
        return direction == Direction::kMinimize ? *a->value < *b->value : *a->value > *b->value;
      });
  const size_t n_complete = std::min<size_t>(std::max<int64_t>(n_below, 0), complete.size());
  TrialSplit split;
  split.below.assign(complete.begin(), complete.begin() + n_complete);
  split.above.assign(complete.begin() + n_complete, complete.end());
  n_below = std::max<int64_t>(0, n_below - static_cast<int64_t>(n_complete));

  std::stable_sort(pruned.begin(), pruned.end(),
                   [direction](const FrozenTrial* a, const FrozenTrial* b) {
                     return PrunedScore(*a, direction) < PrunedScore(*b, direction);
                   });
  const size_t n_pruned = std::min<size_t>(n_below, pruned.size());
  split.below.insert(split.below.end(), pruned.begin(), pruned.begin() + n_pruned);
  split.above.insert(split.above.end(), pruned.begin() + n_pruned, pruned.end());
  split.above.insert(split.above.end(), running.begin(), running.end());
  std::sort(split.below.begin(), split.below.end(), ByNumber);
  std::sort(split.above.begin(), split.above.end(), ByNumber);
  return split;
}

absl::StatusOr<double> TpeSampler::SampleIndependent(const StudyView& study,
                                                     const FrozenTrial& trial,
                                                     const std::string& name,
                                                     const Distribution& distribution) {
  if (IsSingle(distribution)) return SingleValue(distribution);
  std::vector<const FrozenTrial*> finished;
  for (const FrozenTrial& t : study.trials) {
    if (t.state == TrialState::kComplete || t.state == TrialState::kPruned) {
      finished.push_back(&t);
    }
  }
  if (static_cast<int64_t>(finished.size()) < options_.n_startup_trials) {
    return random_.Sample(distribution);
  }
  return SampleTpe(study, finished, name, distribution);
}

absl::StatusOr<double> TpeSampler::SampleTpe(const StudyView& study,
                                             const std::vector<const FrozenTrial*>& trials,
                                             const std::string& name,
                                             const Distribution& distribution) {
  const int64_t n = static_cast<int64_t>(trials.size());
  ASSIGN_OR_RETURN(TrialSplit split, SplitTrials(study.direction, trials, options_.gamma(n)));
  SearchSpace space;
  space.params.emplace_back(name, distribution);
  ASSIGN_OR_RETURN(std::vector<double> below_obs, Observations(split.below, name, distribution));
  ASSIGN_OR_RETURN(std::vector<double> above_obs, Observations(split.above, name, distribution));
  ASSIGN_OR_RETURN(ParzenEstimator below,
                   ParzenEstimator::Create({below_obs}, space, options_.parzen));
  ASSIGN_OR_RETURN(ParzenEstimator above,
                   ParzenEstimator::Create({above_obs}, space, options_.parzen));
  if (options_.n_ei_candidates <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TPE: n_ei_candidates must be positive, but got ", options_.n_ei_candidates));
  }
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> samples,
                   below.Sample(rng_, options_.n_ei_candidates));
  const std::vector<double> log_l = below.LogPdf(samples);
  const std::vector<double> log_g = above.LogPdf(samples);
  std::vector<double> acquisition(log_l.size());
  for (size_t i = 0; i < log_l.size(); ++i) acquisition[i] = log_l[i] - log_g[i];
  const double best = samples[0][numpy::ArgMax(acquisition)];
  // optuna's to_external_repr then to_internal_repr: ints and choice indices truncate.
  return std::holds_alternative<FloatDistribution>(distribution) ? best : std::trunc(best);
}

nlohmann::json TpeSampler::RngState() const {
  return {{"tpe", rng_.draws()}, {"random", random_.rng().draws()}};
}

absl::Status TpeSampler::RestoreRngState(const nlohmann::json& state) {
  NumpyRandomState tpe = rng_;
  RETURN_IF_ERROR(RestoreDraws(state, "tpe", "TPE sampler", tpe));
  RETURN_IF_ERROR(random_.RestoreRngState(state));
  rng_ = tpe;
  return absl::OkStatus();
}

}  // namespace loom::hpsearch
