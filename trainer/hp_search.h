// What Trainer::HyperparameterSearch takes and returns (transformers 4.41
// `Trainer.hyperparameter_search` with its optuna backend, `BestRun`,
// `default_hp_space_optuna`, `default_compute_objective`), with optuna's TPE, random and grid
// samplers and its median pruner built in (//hpsearch).
//
// Contract:
//   - ResolveBackend maps `backend` to a built-in sampler: "optuna" (HF's name; optuna's
//     default sampler) and "tpe" -> TPE, "random", "grid"; HF's other backends ("ray",
//     "sigopt", "wandb") and unknown names are InvalidArgument naming the implemented ones.
//   - ResolveDirection: "minimize" / "maximize"; several directions (optuna's multi-objective)
//     are refused as not implemented.
//   - DefaultHpSpaceOptuna is HF's default_hp_space_optuna: learning_rate float [1e-6, 1e-4]
//     log, num_train_epochs int [1, 5], seed int [1, 40], per_device_train_batch_size
//     categorical [4, 8, 16, 32, 64].
//   - DefaultComputeObjective is HF's default_compute_objective: eval_loss when the metrics have
//     nothing else once "epoch" and the speed metrics (*_runtime, *_per_second,
//     *_compilation_time) are dropped, else the sum of the remaining metrics.
//
// Example:
//   HpSearchOptions o;
//   o.n_trials = 12;
//   o.backend = "tpe";
//   ASSIGN_OR_RETURN(BestRun best, trainer->HyperparameterSearch(o));
#ifndef LOOM_TRAINER_HP_SEARCH_H_
#define LOOM_TRAINER_HP_SEARCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/study.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"
#include "trainer/metrics.h"

namespace loom::trainer {

struct HpSearchOptions {
  // Unset: DefaultHpSpaceOptuna(). Every name must be a TrainingArguments field: a trial's
  // values are set on the arguments it trains with (HF _hp_search_setup).
  std::optional<hpsearch::SearchSpace> hp_space;
  // Unset: DefaultComputeObjective.
  std::function<absl::StatusOr<double>(const Metrics& metrics)> compute_objective;
  int64_t n_trials = 20;  // HF's signature default; the study's total (a resumed one counts)
  // One direction; more than one (optuna multi-objective) is refused.
  std::vector<std::string> direction = {"minimize"};
  std::string backend = "optuna";
  // The run folder's name under output_dir, and TrainerState.trial_name (HF hp_name), from the
  // trial's number and params (the report names past trials from those two alone); unset:
  // folders are "run-<number>" and trial_name stays null, as HF.
  std::function<std::string(const hpsearch::TrialRun& trial)> hp_name;
  // optuna.create_study's arguments loom implements. seed: the sampler's (unset: --seed's
  // value, so a search is reproducible); pruner "median" (optuna's default MedianPruner) or
  // "none".
  std::optional<uint32_t> seed;
  std::string pruner = "median";
  // The study journal; "": <output_dir>/hp_search.journal. study_name: optuna's.
  std::string journal;
  std::string study_name = "hp_search";
};

// HF BestRun.
struct BestRun {
  std::string run_id;
  double objective = 0;
  nlohmann::ordered_json hyperparameters = nlohmann::ordered_json::object();
  nlohmann::ordered_json run_summary;  // null (HF fills it for Ray only)
};

absl::StatusOr<std::string> ResolveBackend(const std::string& backend);
absl::StatusOr<hpsearch::Direction> ResolveDirection(const std::vector<std::string>& direction);
hpsearch::SearchSpace DefaultHpSpaceOptuna();
absl::StatusOr<double> DefaultComputeObjective(const Metrics& metrics);
// The keys DefaultComputeObjective leaves out: "epoch" and the speed metrics.
bool DefaultObjectiveSkips(const std::string& key);
// The median pruner as the study's PruneFn and its settings record; "none": unset.
absl::StatusOr<hpsearch::PruneFn> MakePruner(const std::string& name, nlohmann::json* settings);

// hp_search.json: every trial (number, run name, params, state, value, intermediate values)
// and best_run (HF's BestRun fields), and the text table the search prints.
nlohmann::ordered_json SearchReport(const std::vector<hpsearch::FrozenTrial>& trials,
                                    const hpsearch::SearchSpace& space,
                                    const std::optional<BestRun>& best,
                                    const std::function<std::string(int64_t)>& run_name);
std::string SearchTable(const nlohmann::ordered_json& report);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_HP_SEARCH_H_
