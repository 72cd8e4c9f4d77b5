// optuna 4.6's MedianPruner (optuna/pruners/_median.py, a PercentilePruner at 50): stop a
// trial whose best intermediate value is worse than the median of the completed trials'
// values at the same step.
//
// Contract:
//   - Create(options) checks as optuna does (percentile in [0, 100], n_startup_trials >= 0,
//     n_warmup_steps >= 0, interval_steps >= 1, n_min_trials >= 1; InvalidArgument naming the
//     option otherwise).
//   - Prune(study, trial) is optuna's `prune`: false while fewer than n_startup_trials trials
//     are COMPLETE (or none is), when the trial has reported nothing, before n_warmup_steps,
//     or when its last step is not the first report of its interval; true when every
//     intermediate value of the trial is NaN; otherwise compares the trial's best
//     intermediate value (NaNs ignored) with numpy's nanpercentile (linear interpolation) of
//     the COMPLETE trials' values at the trial's last step (100 - percentile for maximize),
//     not pruning when fewer than n_min_trials completed trials reported that step or all of
//     their values there are NaN.
//   - Usable as a study's PruneFn (hpsearch/study.h): [p](auto& s, auto& t) { return
//     p.Prune(s, t); }.
//
// Example:
//   ASSIGN_OR_RETURN(MedianPruner pruner, MedianPruner::Create({.n_warmup_steps = 2}));
//   if (pruner.Prune(view, trial)) ...  // raise optuna.TrialPruned()
#ifndef LOOM_HPSEARCH_MEDIAN_PRUNER_H_
#define LOOM_HPSEARCH_MEDIAN_PRUNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/trial.h"

namespace loom::hpsearch {

struct MedianPrunerOptions {
  int64_t n_startup_trials = 5;
  int64_t n_warmup_steps = 0;
  int64_t interval_steps = 1;
  int64_t n_min_trials = 1;
  double percentile = 50.0;  // optuna's PercentilePruner; MedianPruner is 50
};

// numpy.nanpercentile(values, q) with the default linear interpolation; NaN when every value
// is NaN or there is none.
double NanPercentile(std::vector<double> values, double q);

class MedianPruner {
 public:
  static absl::StatusOr<MedianPruner> Create(const MedianPrunerOptions& options);

  bool Prune(const StudyView& study, const FrozenTrial& trial) const;
  const MedianPrunerOptions& options() const { return options_; }

 private:
  explicit MedianPruner(const MedianPrunerOptions& options) : options_(options) {}
  MedianPrunerOptions options_;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_MEDIAN_PRUNER_H_
