// optuna 4.6's GridSampler (optuna/samplers/_grid.py) over the grid a SearchSpace spells out:
// every combination of the parameters' values, visited in an order shuffled by the seed.
//
// Contract:
//   - Create(space, seed): each parameter's values are its categorical choices, its ints
//     low, low + step, ..., high, or, for a float with a step, low + k step (k = 0, 1, ...,
//     capped at high); a float without a step (log or not) is InvalidArgument (grid search
//     needs a finite set of values), as is a grid of more than 10 million points. Parameters
//     are sorted by name, combined in itertools.product order, and the list is shuffled with
//     NumpyRandomState(seed)'s legacy shuffle (optuna's `RandomState(seed or 0)`).
//   - BeforeTrial: a trial already holding "grid_id" or "fixed_params" in system_attrs is left
//     alone; trial number k < n_grids gets grid k; later ones a random choice (the legacy
//     randint) among the grids no finished or running trial of the same grid holds, in
//     CPython's set order (hpsearch/python_int_set.h), or among the unfinished ones, or all.
//     It writes system_attrs "search_space" ({name: [values]}) and "grid_id".
//   - SampleIndependent returns the trial's grid value for `name` as `distribution`'s
//     internal value; a trial without "grid_id" or a name outside the grid is
//     InvalidArgument, as in optuna. A single-valued distribution returns its value.
//   - ExhaustedAfter(study, trial) is optuna's after_trial stop rule: no grid is left that
//     neither a finished trial nor another running one holds, beyond `trial`'s own (counted as
//     running, as optuna calls after_trial before the trial is marked finished).
//   - RngState() is {"grid": draws} (the shuffle's included); RestoreRngState restores it.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<GridSampler> grid, GridSampler::Create(space, 0));
//   RETURN_IF_ERROR(grid->BeforeTrial(view, trial));
#ifndef LOOM_HPSEARCH_GRID_SAMPLER_H_
#define LOOM_HPSEARCH_GRID_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/numpy_random.h"
#include "hpsearch/sampler.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

class GridSampler final : public Sampler {
 public:
  static constexpr int64_t kMaxGridPoints = 10'000'000;

  static absl::StatusOr<std::unique_ptr<GridSampler>> Create(const SearchSpace& space,
                                                             uint32_t seed);

  absl::Status BeforeTrial(const StudyView& study, FrozenTrial& trial) override;
  absl::StatusOr<double> SampleIndependent(const StudyView& study, const FrozenTrial& trial,
                                           const std::string& name,
                                           const Distribution& distribution) override;
  bool ExhaustedAfter(const StudyView& study, const FrozenTrial& trial) const override;
  nlohmann::json RngState() const override { return {{"grid", rng_.draws()}}; }
  absl::Status RestoreRngState(const nlohmann::json& state) override;

  int64_t n_grids() const { return static_cast<int64_t>(order_.size()); }
  // {name: [values]}, names sorted: what trials record as "search_space".
  const nlohmann::json& search_space() const { return search_space_; }
  // The value of `name` in grid `grid_id`; nullptr when there is no such name or grid.
  const nlohmann::json* Value(int64_t grid_id, const std::string& name) const;

 private:
  GridSampler(std::vector<std::string> names, std::vector<std::vector<nlohmann::json>> values,
              uint32_t seed);
  bool SameSearchSpace(const nlohmann::json& other) const;
  // optuna's _get_unvisited_grid_ids, `current` (a trial number, or -1) counted as running.
  std::vector<int64_t> Unvisited(const StudyView& study, int64_t current,
                                 const FrozenTrial* current_trial) const;

  std::vector<std::string> names_;                   // sorted
  std::vector<std::vector<nlohmann::json>> values_;  // per name
  nlohmann::json search_space_;
  std::vector<int64_t> order_;  // grid id -> index into the itertools.product order
  NumpyRandomState rng_;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_GRID_SAMPLER_H_
