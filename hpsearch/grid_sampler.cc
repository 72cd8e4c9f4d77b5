#include "hpsearch/grid_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hpsearch/python_int_set.h"
#include "hpsearch/random_sampler.h"
#include "hpsearch/single_value.h"

namespace loom::hpsearch {
namespace {

constexpr char kGridId[] = "grid_id";
constexpr char kSearchSpace[] = "search_space";

absl::Status TooLarge(const std::string& name) {
  return absl::InvalidArgumentError(absl::StrCat(
      "grid search: the grid grows past ", GridSampler::kMaxGridPoints, " points at parameter \"",
      name, "\"; give it fewer values (a larger step or a narrower ",
      "range) or use the \"tpe\" or \"random\" backend"));
}

// The values grid search enumerates for one parameter.
absl::StatusOr<std::vector<nlohmann::json>> GridValues(const std::string& name,
                                                       const Distribution& d) {
  if (const auto* c = std::get_if<CategoricalDistribution>(&d)) return c->choices;
  std::vector<nlohmann::json> values;
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    if ((i->high - i->low) / i->step + 1 > GridSampler::kMaxGridPoints) return TooLarge(name);
    for (int64_t v = i->low; v <= i->high; v += i->step) values.emplace_back(v);
    return values;
  }
  const auto& f = std::get<FloatDistribution>(d);
  if (!f.step || f.log) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grid search needs a finite set of values, but parameter \"", name,
        "\" is a continuous float", f.log ? " on a log scale" : "",
        "; give it a step (\"step\": 0.1), or make it an int or categorical parameter"));
  }
  const double n = std::floor((f.high - f.low) / *f.step + 1e-8);
  if (n + 1 > GridSampler::kMaxGridPoints) return TooLarge(name);
  for (int64_t k = 0; k <= static_cast<int64_t>(n); ++k) {
    values.emplace_back(std::min(f.low + static_cast<double>(k) * *f.step, f.high));
  }
  return values;
}

const nlohmann::json* Find(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GridSampler>> GridSampler::Create(const SearchSpace& space,
                                                                 uint32_t seed) {
  if (space.params.empty()) {
    return absl::InvalidArgumentError(
        "grid search: the search space is empty; give it one or more parameters");
  }
  std::vector<std::pair<std::string, const Distribution*>> sorted;
  for (const auto& [name, d] : space.params) sorted.emplace_back(name, &d);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  std::vector<std::vector<nlohmann::json>> values;
  int64_t total = 1;
  for (const auto& [name, d] : sorted) {
    ASSIGN_OR_RETURN(std::vector<nlohmann::json> v, GridValues(name, *d));
    if (v.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("grid search: parameter \"", name, "\" has no values; give it one or more"));
    }
    if (total > kMaxGridPoints / static_cast<int64_t>(v.size())) return TooLarge(name);
    total *= static_cast<int64_t>(v.size());
    names.push_back(name);
    values.push_back(std::move(v));
  }
  return std::unique_ptr<GridSampler>(new GridSampler(std::move(names), std::move(values), seed));
}

GridSampler::GridSampler(std::vector<std::string> names,
                         std::vector<std::vector<nlohmann::json>> values, uint32_t seed)
    : names_(std::move(names)), values_(std::move(values)), rng_(seed) {
  search_space_ = nlohmann::json::object();
  int64_t total = 1;
  for (size_t p = 0; p < names_.size(); ++p) {
    search_space_[names_[p]] = values_[p];
    total *= static_cast<int64_t>(values_[p].size());
  }
  order_.resize(total);
  std::iota(order_.begin(), order_.end(), 0);
  rng_.Shuffle(order_);
}

const nlohmann::json* GridSampler::Value(int64_t grid_id, const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end() || grid_id < 0 || grid_id >= n_grids()) return nullptr;
  const size_t p = it - names_.begin();
  int64_t t = order_[grid_id];
  for (size_t q = names_.size(); q-- > p + 1;) t /= static_cast<int64_t>(values_[q].size());
  return &values_[p][t % static_cast<int64_t>(values_[p].size())];
}

bool GridSampler::SameSearchSpace(const nlohmann::json& other) const {
  if (!other.is_object() || other.size() != names_.size()) return false;
  for (size_t p = 0; p < names_.size(); ++p) {
    const nlohmann::json* list = Find(other, names_[p].c_str());
    if (list == nullptr || !list->is_array() || list->size() != values_[p].size()) return false;
    for (size_t k = 0; k < values_[p].size(); ++k) {
      if (!CategoricalChoiceEqual((*list)[k], values_[p][k])) return false;
    }
  }
  return true;
}

std::vector<int64_t> GridSampler::Unvisited(const StudyView& study, int64_t current,
                                            const FrozenTrial* current_trial) const {
  std::vector<int64_t> visited, running;
  auto count = [&](const nlohmann::json& attrs, TrialState state) {
    const nlohmann::json* id = Find(attrs, kGridId);
    const nlohmann::json* space = Find(attrs, kSearchSpace);
    if (id == nullptr || !id->is_number_integer() || space == nullptr || !SameSearchSpace(*space)) {
      return;
    }
    if (IsFinished(state)) {
      visited.push_back(id->get<int64_t>());
    } else if (state == TrialState::kRunning) {
      running.push_back(id->get<int64_t>());
    }
  };
  bool current_seen = false;
  for (const FrozenTrial& t : study.trials) {
    if (current_trial != nullptr && t.number == current) {
      current_seen = true;
      count(current_trial->system_attrs, TrialState::kRunning);
    } else {
      count(t.system_attrs, t.state);
    }
  }
  if (current_trial != nullptr && !current_seen) {
    count(current_trial->system_attrs, TrialState::kRunning);
  }
  const PythonIntSet all = PythonIntSet::Range(n_grids());
  const PythonIntSet not_visited = all.Minus(PythonIntSet::Of(visited));
  PythonIntSet unvisited = not_visited.Minus(PythonIntSet::Of(running));
  if (unvisited.size() == 0) unvisited = all.Minus(PythonIntSet::Of(visited));
  return unvisited.Items();
}

absl::Status GridSampler::BeforeTrial(const StudyView& study, FrozenTrial& trial) {
  if (Find(trial.system_attrs, kGridId) != nullptr ||
      Find(trial.system_attrs, "fixed_params") != nullptr) {
    return absl::OkStatus();
  }
  int64_t grid_id = trial.number;
  if (trial.number < 0 || trial.number >= n_grids()) {
    std::vector<int64_t> target = Unvisited(study, -1, nullptr);
    if (target.empty()) {
      target.resize(n_grids());
      std::iota(target.begin(), target.end(), 0);
    }
    grid_id = target[rng_.RandInt(0, static_cast<int64_t>(target.size()))];
  }
  if (!trial.system_attrs.is_object()) trial.system_attrs = nlohmann::json::object();
  trial.system_attrs[kSearchSpace] = search_space_;
  trial.system_attrs[kGridId] = grid_id;
  return absl::OkStatus();
}

absl::StatusOr<double> GridSampler::SampleIndependent(const StudyView& study,
                                                      const FrozenTrial& trial,
                                                      const std::string& name,
                                                      const Distribution& distribution) {
  if (IsSingle(distribution)) return SingleValue(distribution);
  const nlohmann::json* id = Find(trial.system_attrs, kGridId);
  if (id == nullptr || !id->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grid search: trial ", trial.number, " has no \"grid_id\" system attribute. All ",
        "parameters must be specified when using GridSampler with enqueue_trial."));
  }
  if (std::find(names_.begin(), names_.end(), name) == names_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("grid search: the parameter name, ", name,
                                                   ", is not found in the given grid."));
  }
  const nlohmann::json* value = Value(id->get<int64_t>(), name);
  if (value == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("grid search: trial ", trial.number,
                                                   "'s grid_id ", id->dump(), " is outside the ",
                                                   n_grids(), " grids of this search space"));
  }
  ASSIGN_OR_RETURN(double internal, ToInternal(distribution, *value),
                   absl::StrCat("grid search: the grid value of \"", name, "\""));
  return internal;
}

bool GridSampler::ExhaustedAfter(const StudyView& study, const FrozenTrial& trial) const {
  const std::vector<int64_t> target = Unvisited(study, trial.number, &trial);
  if (target.empty()) return true;
  if (target.size() != 1) return false;
  const nlohmann::json* id = Find(trial.system_attrs, kGridId);
  return id != nullptr && id->is_number_integer() && id->get<int64_t>() == target[0];
}

absl::Status GridSampler::RestoreRngState(const nlohmann::json& state) {
  return RestoreDraws(state, "grid", "grid sampler", rng_);
}

}  // namespace loom::hpsearch
