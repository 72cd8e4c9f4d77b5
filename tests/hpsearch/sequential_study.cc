#include "tests/hpsearch/sequential_study.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hpsearch/median_pruner.h"
#include "hpsearch/sampler.h"

namespace loom::hpsearch::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* kSpaces[][2] = {
    {"quadratic_1d", R"({"x": {"type": "float", "low": -5, "high": 5}})"},
    {"mixed_3d",
     R"({"lr": {"type": "float", "low": 1e-5, "high": 1e-1, "log": true},
         "layers": {"type": "int", "low": 1, "high": 8},
         "act": {"type": "categorical", "choices": ["relu", "tanh", "gelu"]}})"},
    {"all_kinds",
     R"({"x": {"type": "float", "low": -3, "high": 3},
         "lr": {"type": "float", "low": 1e-4, "high": 1, "log": true},
         "drop": {"type": "float", "low": 0, "high": 0.5, "step": 0.1},
         "n": {"type": "int", "low": 0, "high": 20, "step": 2},
         "units": {"type": "int", "low": 4, "high": 256, "log": true},
         "opt": {"type": "categorical", "choices": ["sgd", "adam", "rmsprop"]},
         "bs": {"type": "categorical", "choices": [16, 32, 64]}})"},
    {"grid_4d",
     R"({"drop": {"type": "float", "low": 0, "high": 0.5, "step": 0.125},
         "n": {"type": "int", "low": 0, "high": 6, "step": 2},
         "opt": {"type": "categorical", "choices": ["sgd", "adam", "rmsprop"]},
         "bs": {"type": "categorical", "choices": [16, 32]}})"},
};

// The trial's external value of `name` (its distribution in `space`).
absl::StatusOr<nlohmann::json> Param(const FrozenTrial& trial, const SearchSpace& space,
                                     const std::string& name) {
  const Distribution* d = space.Find(name);
  const auto it = trial.params.find(name);
  if (d == nullptr || it == trial.params.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial ", trial.number, " has no parameter \"", name, "\""));
  }
  return ToExternal(*d, it->second);
}

double Cost(const std::map<std::string, double>& costs, const nlohmann::json& choice) {
  return costs.at(choice.is_string() ? choice.get<std::string>() : choice.dump());
}

// "all_kinds", and "grid_4d" (its drop, n, opt and bs only).
absl::StatusOr<double> AllKinds(const FrozenTrial& t, const SearchSpace& s) {
  ASSIGN_OR_RETURN(nlohmann::json drop, Param(t, s, "drop"));
  ASSIGN_OR_RETURN(nlohmann::json n, Param(t, s, "n"));
  ASSIGN_OR_RETURN(nlohmann::json opt, Param(t, s, "opt"));
  ASSIGN_OR_RETURN(nlohmann::json bs, Param(t, s, "bs"));
  double v = 0.0;
  if (s.Find("x") != nullptr) {
    ASSIGN_OR_RETURN(nlohmann::json x, Param(t, s, "x"));
    v = x.get<double>() * x.get<double>();
  }
  if (s.Find("lr") != nullptr) {
    ASSIGN_OR_RETURN(nlohmann::json lr, Param(t, s, "lr"));
    const double tl = std::log10(lr.get<double>()) + 2;
    v = v + tl * tl;
  }
  const double d = drop.get<double>() - 0.2;
  v = v + 10.0 * (d * d);
  const double m = static_cast<double>(n.get<int64_t>() - 8) / 4.0;
  v = v + m * m;
  if (s.Find("units") != nullptr) {
    ASSIGN_OR_RETURN(nlohmann::json units, Param(t, s, "units"));
    const double u = std::log(static_cast<double>(units.get<int64_t>()) / 64.0);
    v = v + 0.1 * (u * u);
  }
  v = v + Cost({{"sgd", 0.3}, {"adam", 0.0}, {"rmsprop", 0.1}}, opt);
  return v + Cost({{"16", 0.2}, {"32", 0.0}, {"64", 0.05}}, bs);
}

struct Running {
  std::vector<FrozenTrial>& history;
  Direction direction;
  double sign;
};

// Reports `value` at `step` for the running trial (optuna's trial.report).
void Report(Running& r, int64_t step, double value) {
  r.history.back().intermediate_values.emplace(step, value);
}

void Finish(Running& r, TrialState state, std::optional<double> value) {
  FrozenTrial& t = r.history.back();
  t.state = state;
  t.value = value;
  if (state == TrialState::kPruned) {
    t.value = std::nullopt;
    if (auto step = t.last_step()) {
      const double last = t.intermediate_values.at(*step);
      if (!std::isnan(last)) t.value = last;
    }
  }
}

void RunSchedule(Running& r, double f) {
  const int64_t k = r.history.back().number;
  if (k % 11 == 10) return Finish(r, TrialState::kPruned, std::nullopt);
  const int64_t prune_at = k % 3 == 2 ? k % 5 : -1;
  for (int64_t s = 0; s < 5; ++s) {
    double v = r.sign * (f + 1.0 / static_cast<double>(s + 1));
    if (k % 7 == 6 && s == prune_at) v = kNaN;
    Report(r, s, v);
    if (s == prune_at) return Finish(r, TrialState::kPruned, std::nullopt);
  }
  Finish(r, TrialState::kComplete, r.sign * f);
}

absl::Status RunMedian(Running& r, double f, const MedianPruner& pruner) {
  for (int64_t s = 0; s < 8; ++s) {
    Report(r, s, r.sign * (f + 2.0 / static_cast<double>(s + 1)));
    if (pruner.Prune(StudyView{r.direction, r.history}, r.history.back())) {
      Finish(r, TrialState::kPruned, std::nullopt);
      return absl::OkStatus();
    }
  }
  Finish(r, TrialState::kComplete, r.sign * f);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SearchSpace> ObjectiveSpace(const std::string& objective) {
  for (const auto& [name, json] : kSpaces) {
    if (objective == name) return ParseSearchSpace(json);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown objective \"", objective, "\""));
}

absl::StatusOr<double> ObjectiveValue(const std::string& objective, const FrozenTrial& trial,
                                      const SearchSpace& space) {
  if (objective == "quadratic_1d") {
    ASSIGN_OR_RETURN(nlohmann::json x, Param(trial, space, "x"));
    const double d = x.get<double>() - 1.7;
    return d * d;
  }
  if (objective == "mixed_3d") {
    ASSIGN_OR_RETURN(nlohmann::json lr, Param(trial, space, "lr"));
    ASSIGN_OR_RETURN(nlohmann::json layers, Param(trial, space, "layers"));
    ASSIGN_OR_RETURN(nlohmann::json act, Param(trial, space, "act"));
    const double t = std::log10(lr.get<double>()) + 3;
    double v = t * t;
    const int64_t l = layers.get<int64_t>() - 4;
    v = v + 0.1 * static_cast<double>(l * l);
    return v + Cost({{"relu", 0.5}, {"tanh", 0.0}, {"gelu", 0.25}}, act);
  }
  if (objective == "all_kinds" || objective == "grid_4d") return AllKinds(trial, space);
  return absl::InvalidArgumentError(absl::StrCat("unknown objective \"", objective, "\""));
}

absl::StatusOr<std::vector<FrozenTrial>> RunSequentialStudy(const StudyConfig& config) {
  SamplerOptions options;
  options.seed = config.seed;
  options.space = config.space;
  ASSIGN_OR_RETURN(std::unique_ptr<Sampler> sampler, CreateSampler(config.sampler, options));
  ASSIGN_OR_RETURN(MedianPruner pruner, MedianPruner::Create({}));
  std::vector<FrozenTrial> history;
  Running r{history, config.direction, config.direction == Direction::kMaximize ? -1.0 : 1.0};
  for (int64_t k = 0; k < config.n_trials; ++k) {
    FrozenTrial fresh;
    fresh.number = k;
    history.push_back(std::move(fresh));
    const StudyView view{config.direction, history};
    RETURN_IF_ERROR_CTX(sampler->BeforeTrial(view, history.back()), absl::StrCat("trial ", k));
    for (const auto& [name, d] : config.space.params) {
      ASSIGN_OR_RETURN(double v, sampler->SampleIndependent(view, history.back(), name, d),
                       absl::StrCat("trial ", k, " sampling \"", name, "\""));
      history.back().params[name] = v;
      history.back().distributions.insert_or_assign(name, d);
    }
    ASSIGN_OR_RETURN(double f, ObjectiveValue(config.objective, history.back(), config.space));
    if (config.prune == "schedule") {
      RunSchedule(r, f);
    } else if (config.prune == "median") {
      RETURN_IF_ERROR(RunMedian(r, f, pruner));
    } else {
      Finish(r, TrialState::kComplete, r.sign * f);
    }
    if (sampler->ExhaustedAfter(view, history.back())) break;
  }
  return history;
}

nlohmann::json TrialsToJson(const std::vector<FrozenTrial>& trials, const SearchSpace& space) {
  nlohmann::json out = nlohmann::json::array();
  for (const FrozenTrial& t : trials) {
    nlohmann::json j;
    j["number"] = t.number;
    j["state"] = TrialStateName(t.state);
    j["value"] = t.value ? nlohmann::json(*t.value) : nlohmann::json(nullptr);
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, d] : space.params) {
      const auto it = t.params.find(name);
      if (it != t.params.end()) params[name] = ToExternal(d, it->second);
    }
    j["params"] = params;
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& [step, v] : t.intermediate_values) {
      steps.push_back({step, std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v)});
    }
    j["intermediate"] = steps;
    for (const char* key : {"grid_id", "search_space"}) {
      if (t.system_attrs.is_object() && t.system_attrs.contains(key)) {
        j[key] = t.system_attrs[key];
      }
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace loom::hpsearch::testing
