#include "trainer/hp_search.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/python_float.h"
#include "base/status_macros.h"
#include "hpsearch/median_pruner.h"
#include "hpsearch/sampler.h"

namespace loom::trainer {

absl::StatusOr<std::string> ResolveBackend(const std::string& backend) {
  if (backend == "optuna" || backend == "tpe") return std::string("tpe");
  for (const std::string& name : hpsearch::RegisteredSamplers()) {
    if (backend == name) return name;
  }
  const std::string implemented = absl::StrJoin(hpsearch::RegisteredSamplers(), ", ");
  if (backend == "ray" || backend == "sigopt" || backend == "wandb") {
    return absl::InvalidArgumentError(
        absl::StrCat("hyperparameter search backend \"", backend,
                     "\" is a Python service loom does not run; the built-in backends are ",
                     implemented, " (optuna's samplers; \"optuna\" means tpe)"));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown hyperparameter search backend \"",
                                                 backend, "\": the built-in backends are ",
                                                 implemented, " (\"optuna\" means tpe)"));
}

absl::StatusOr<hpsearch::Direction> ResolveDirection(const std::vector<std::string>& direction) {
  if (direction.size() != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "hyperparameter search with ", direction.size(),
        " directions (optuna's multi-objective search) is not implemented: give one direction, "
        "\"minimize\" or \"maximize\""));
  }
  if (direction[0] == "minimize") return hpsearch::Direction::kMinimize;
  if (direction[0] == "maximize") return hpsearch::Direction::kMaximize;
  return absl::InvalidArgumentError(absl::StrCat("hyperparameter search direction \"", direction[0],
                                                 "\": use \"minimize\" or \"maximize\""));
}

hpsearch::SearchSpace DefaultHpSpaceOptuna() {
  hpsearch::SearchSpace space;
  space.params.emplace_back("learning_rate", hpsearch::FloatDistribution{1e-6, 1e-4, true, {}});
  space.params.emplace_back("num_train_epochs", hpsearch::IntDistribution{1, 5, false, 1});
  space.params.emplace_back("seed", hpsearch::IntDistribution{1, 40, false, 1});
  space.params.emplace_back(
      "per_device_train_batch_size",
      hpsearch::CategoricalDistribution{{nlohmann::json(4), nlohmann::json(8), nlohmann::json(16),
                                         nlohmann::json(32), nlohmann::json(64)}});
  return space;
}

bool DefaultObjectiveSkips(const std::string& key) {
  return key == "epoch" || absl::EndsWith(key, "_runtime") || absl::EndsWith(key, "_per_second") ||
         absl::EndsWith(key, "_compilation_time");
}

absl::StatusOr<double> DefaultComputeObjective(const Metrics& metrics) {
  std::optional<double> loss;
  double sum = 0;
  int64_t others = 0;
  for (const auto& [key, value] : metrics.items()) {
    if (DefaultObjectiveSkips(key)) continue;
    if (!value.is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat("default_compute_objective: metric \"", key,
                       "\" is not a number; give the search a compute_objective of your own"));
    }
    if (key == "eval_loss") {
      loss = value.get<double>();
      continue;
    }
    sum += value.get<double>();
    ++others;
  }
  if (others > 0) return sum;
  if (!loss) {
    return absl::InvalidArgumentError(
        "default_compute_objective: the evaluation returned no eval_loss and no metrics");
  }
  return *loss;
}

absl::StatusOr<hpsearch::PruneFn> MakePruner(const std::string& name, nlohmann::json* settings) {
  if (name == "none") {
    *settings = nullptr;
    return hpsearch::PruneFn();
  }
  if (name != "median") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown pruner \"", name, "\": use \"median\" (optuna's MedianPruner) or \"none\""));
  }
  hpsearch::MedianPrunerOptions options;  // optuna 4.6 MedianPruner's defaults
  ASSIGN_OR_RETURN(hpsearch::MedianPruner pruner, hpsearch::MedianPruner::Create(options));
  *settings = nlohmann::json{{"name", "median"},
                             {"n_startup_trials", options.n_startup_trials},
                             {"n_warmup_steps", options.n_warmup_steps},
                             {"interval_steps", options.interval_steps},
                             {"n_min_trials", options.n_min_trials}};
  return hpsearch::PruneFn(
      [pruner](const hpsearch::StudyView& study, const hpsearch::FrozenTrial& trial) {
        return pruner.Prune(study, trial);
      });
}

nlohmann::ordered_json SearchReport(const std::vector<hpsearch::FrozenTrial>& trials,
                                    const hpsearch::SearchSpace& space,
                                    const std::optional<BestRun>& best,
                                    const std::function<std::string(int64_t)>& run_name) {
  nlohmann::ordered_json report;
  report["trials"] = nlohmann::ordered_json::array();
  for (const hpsearch::FrozenTrial& t : trials) {
    nlohmann::ordered_json entry;
    entry["number"] = t.number;
    entry["run_name"] = run_name(t.number);
    entry["params"] = hpsearch::ExternalParams(t, space);
    std::string state = hpsearch::TrialStateName(t.state);
    for (char& c : state) c = static_cast<char>(std::tolower(c));
    entry["state"] = state;
    entry["objective"] = t.value ? nlohmann::ordered_json(*t.value) : nlohmann::ordered_json();
    nlohmann::ordered_json intermediate = nlohmann::ordered_json::object();
    for (const auto& [step, v] : t.intermediate_values) intermediate[std::to_string(step)] = v;
    entry["intermediate_values"] = intermediate;
    report["trials"].push_back(entry);
  }
  if (best) {
    report["best_run"] = {{"run_id", best->run_id},
                          {"objective", best->objective},
                          {"hyperparameters", best->hyperparameters},
                          {"run_summary", best->run_summary}};
  } else {
    report["best_run"] = nullptr;
  }
  return report;
}

std::string SearchTable(const nlohmann::ordered_json& report) {
  std::string out =
      absl::StrFormat("%-8s %-10s %-22s %s\n", "trial", "state", "objective", "hyperparameters");
  for (const auto& t : report["trials"]) {
    const std::string objective =
        t["objective"].is_number() ? base::PythonFloatRepr(t["objective"].get<double>()) : "-";
    absl::StrAppendFormat(&out, "%-8s %-10s %-22s %s\n", t["run_name"].get<std::string>(),
                          t["state"].get<std::string>(), objective, t["params"].dump());
  }
  if (report["best_run"].is_object()) {
    absl::StrAppend(&out, "best run: ", report["best_run"]["run_id"].get<std::string>(),
                    " objective ",
                    base::PythonFloatRepr(report["best_run"]["objective"].get<double>()), " ",
                    report["best_run"]["hyperparameters"].dump(), "\n");
  }
  return out;
}

}  // namespace loom::trainer
