// Trainer::HyperparameterSearch and its hooks into the training loop (transformers 4.41
// `Trainer.hyperparameter_search`, `_hp_search_setup`, `_report_to_hp_search`,
// `_get_output_dir`, and `run_hp_search_optuna` of integrations/integration_utils.py).
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "args/field_value.h"
#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "hpsearch/sampler.h"
#include "hpsearch/study.h"
#include "trainer/trainer.h"

namespace loom::trainer {
namespace {

using Json = nlohmann::ordered_json;

// HF _hp_search_setup's `type(old_attr)(value)`: a float for a float field, an int (truncated,
// as Python's int()) for an int field.
Json CastForField(const google::protobuf::FieldDescriptor* field, const Json& value) {
  using CppType = google::protobuf::FieldDescriptor::CppType;
  switch (field->cpp_type()) {
    case CppType::CPPTYPE_INT32:
    case CppType::CPPTYPE_INT64:
      // (Beyond what an int64 holds, the float is left for SetFromJson to refuse.)
      if (value.is_number_float() && std::abs(value.get<double>()) < 9.2e18) {
        return static_cast<int64_t>(value.get<double>());
      }
      return value;
    case CppType::CPPTYPE_DOUBLE:
    case CppType::CPPTYPE_FLOAT:
      if (value.is_number()) return value.get<double>();
      return value;
    default:
      return value;
  }
}

std::string DefaultRunName(int64_t number) { return absl::StrCat("run-", number); }

Json TrialMessage(const std::optional<hpsearch::TrialRun>& run) {
  if (!run) return Json{{"run", nullptr}};
  return Json{{"run",
               {{"number", run->number},
                {"trial_id", run->trial_id},
                {"attempt", run->attempt},
                {"params", run->params}}}};
}

absl::StatusOr<std::optional<hpsearch::TrialRun>> ParseTrialMessage(const std::string& text) {
  ASSIGN_OR_RETURN(Json j, base::ParsePythonJson(text), "the trial rank 0 sent");
  if (j["run"].is_null()) return std::nullopt;
  hpsearch::TrialRun run;
  run.number = j["run"]["number"].get<int64_t>();
  run.trial_id = j["run"]["trial_id"].get<int64_t>();
  run.attempt = j["run"]["attempt"].get<int64_t>();
  run.params = j["run"]["params"];
  return run;
}

Json BestRunJson(const BestRun& b) {
  return Json{{"run_id", b.run_id},
              {"objective", b.objective},
              {"hyperparameters", b.hyperparameters},
              {"run_summary", b.run_summary}};
}

// HF's default_compute_objective, with a warning (once) when it sums metrics such as accuracy
// while the search minimizes: HF's default direction suits a loss only.
std::function<absl::StatusOr<double>(const Metrics&)> DefaultObjectiveWarning(
    const HpSearchOptions& options) {
  const bool minimize = options.direction.size() == 1 && options.direction[0] == "minimize";
  auto warned = std::make_shared<bool>(false);
  return [minimize, warned](const Metrics& metrics) -> absl::StatusOr<double> {
    if (minimize && !*warned) {
      for (const auto& [key, value] : metrics.items()) {
        if (key != "eval_loss" && !DefaultObjectiveSkips(key)) {
          LOG(WARNING) << "The search's objective is the sum of the evaluation's metrics (" << key
                       << ", ...) and it is minimized (HF's default direction, meant for a "
                          "loss): give direction \"maximize\" (--hp_direction maximize) to "
                          "maximize them";
          *warned = true;
          break;
        }
      }
    }
    return DefaultComputeObjective(metrics);
  };
}

}  // namespace

std::string Trainer::RunDir() const {
  if (!trial_) return args_.output_dir();
  return absl::StrCat(args_.output_dir(), "/", trial_->run_name);
}

absl::Status Trainer::CheckSearchOptions(const HpSearchOptions& options,
                                         const hpsearch::SearchSpace& space) const {
  if (!options_.model_init) {
    return absl::InvalidArgumentError(
        "To use hyperparameter search, you need to pass your model through a model_init "
        "function (set TrainerOptions.model_init instead of TrainerOptions.model).");
  }
  if (user_optimizer_) {
    return absl::InvalidArgumentError(
        "Passing a `model_init` is incompatible with providing the `optimizers` argument: "
        "every trial builds its own; subclass Trainer and override CreateOptimizerAndScheduler.");
  }
  RETURN_IF_ERROR(ResolveBackend(options.backend).status());
  RETURN_IF_ERROR(ResolveDirection(options.direction).status());
  if (options.n_trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_trials must be at least 1, got ", options.n_trials));
  }
  nlohmann::json pruner_settings;
  RETURN_IF_ERROR(MakePruner(options.pruner, &pruner_settings).status());
  if (space.params.empty()) return absl::InvalidArgumentError("the search space is empty");
  // Every parameter must land on a TrainingArguments field of a compatible type: its bounds or
  // choices are set on a copy of the arguments now, before any trial trains.
  args::TrainingArguments probe = args_;
  for (const auto& [name, d] : space.params) {
    const auto* field = probe.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search-space parameter \"", name,
          "\" is not a TrainingArguments field: a trial's values are set on the arguments it "
          "trains with (HF _hp_search_setup); rename it or remove it"));
    }
    std::vector<Json> values;  // the choices, or the low and high bounds
    if (const auto* c = std::get_if<hpsearch::CategoricalDistribution>(&d)) {
      for (const auto& v : c->choices) values.push_back(Json::parse(v.dump()));
    } else {
      const Json abbreviated = hpsearch::DistributionToAbbreviated(d);
      values = {abbreviated["low"], abbreviated["high"]};
    }
    for (const Json& v : values) {
      RETURN_IF_ERROR(args::SetFromJson(&probe, field, CastForField(field, v),
                                        absl::StrCat("search-space parameter \"", name, "\"")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<hpsearch::Study>> Trainer::OpenStudy(
    const HpSearchOptions& options, const hpsearch::SearchSpace& space) {
  hpsearch::StudyOptions o;
  o.journal_path =
      options.journal.empty() ? args_.output_dir() + "/hp_search.journal" : options.journal;
  o.study_name = options.study_name;
  ASSIGN_OR_RETURN(o.direction, ResolveDirection(options.direction));
  ASSIGN_OR_RETURN(o.backend, ResolveBackend(options.backend));
  const int64_t seed = options.seed ? int64_t{*options.seed} : args_.seed();
  if (seed < 0 || seed > int64_t{UINT32_MAX}) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the search's sampler seed (--seed unless given) must be in [0, 2**32 - 1] as numpy's "
        "RandomState needs, got ",
        seed));
  }
  o.sampler.seed = static_cast<uint32_t>(seed);
  o.sampler.space = space;
  ASSIGN_OR_RETURN(o.pruner, MakePruner(options.pruner, &o.pruner_settings));
  o.n_trials = options.n_trials;
  RETURN_IF_ERROR(base::MakeDirs(base::Dirname(o.journal_path)));
  return hpsearch::Study::Open(std::move(o));
}

absl::StatusOr<std::optional<hpsearch::TrialRun>> Trainer::NextTrial(hpsearch::Study* study) {
  std::string message;
  absl::Status asked = absl::OkStatus();
  if (study != nullptr) {
    absl::StatusOr<std::optional<hpsearch::TrialRun>> run = study->Ask();
    if (run.ok()) {
      message = base::PyJsonDumps(TrialMessage(*run), -1, false);
    } else {
      asked = run.status();
    }
  }
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(asked, "the next trial of the study"));
  RETURN_IF_ERROR_CTX(parallel_.BroadcastString(message), "sharing the trial");
  return ParseTrialMessage(message);
}

absl::Status Trainer::ApplyTrialParams(const Json& params) {
  for (const auto& [name, value] : params.items()) {
    const auto* field = args_.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("trial parameter \"", name, "\" is not a TrainingArguments field"));
    }
    RETURN_IF_ERROR(args::SetFromJson(&args_, field, CastForField(field, value),
                                      absl::StrCat("trial parameter \"", name, "\"")));
  }
  return absl::OkStatus();
}

absl::Status Trainer::ReportToHpSearch(const Metrics& metrics) {
  if (!trial_) return absl::OkStatus();
  absl::StatusOr<double> computed = trial_->compute_objective(metrics);
  absl::Status asked = base::Annotate(computed.status(), "compute_objective");
  const double objective = computed.ok() ? *computed : std::nan("");
  if (computed.ok()) trial_->objective = objective;
  // Rank 0 reports to the study and asks its pruner; every rank follows its answer.
  std::string decision = "continue";
  if (asked.ok() && trial_->study != nullptr) {
    asked = trial_->study->Report(trial_->run, state_.global_step, objective);
    if (asked.ok()) {
      absl::StatusOr<bool> prune = trial_->study->ShouldPrune(trial_->run);
      asked = prune.status();
      if (prune.ok() && *prune) decision = "prune";
    }
  }
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(asked, "reporting to the study"));
  RETURN_IF_ERROR_CTX(parallel_.BroadcastString(decision), "sharing the pruner's answer");
  if (decision != "prune") return absl::OkStatus();
  LOG(INFO) << "Trial " << trial_->run.number << " pruned at step " << state_.global_step
            << " (objective " << objective << ")";
  RETURN_IF_ERROR(callbacks_.OnTrainEnd(args_, state_, control_));
  trial_->pruned = true;  // (an on_train_end error is the trial's failure instead)
  return absl::AbortedError(
      absl::StrCat("trial ", trial_->run.number, " pruned at step ", state_.global_step));
}

absl::Status Trainer::BeginTrial(const HpSearchOptions& options, hpsearch::Study* study,
                                 const hpsearch::TrialRun& run) {
  TrialContext context;
  context.run = run;
  context.run_name = options.hp_name ? options.hp_name(run) : DefaultRunName(run.number);
  if (options.hp_name) context.trial_name = context.run_name;
  context.study = study;
  context.compute_objective = options.compute_objective;  // set by HyperparameterSearch
  trial_ = std::move(context);
  state_ = TrainerState();  // is_hyper_param_search once this trial's training has begun
  LOG(INFO) << "Trial: " << run.params.dump()
            << (run.attempt > 1
                    ? absl::StrCat(" (trial ", run.number, " run again: attempt ", run.attempt, ")")
                    : std::string());
  if (run.attempt == 1 || !parallel_.ShouldSave(args_)) return absl::OkStatus();
  // The abandoned attempt's folder is kept aside, so that this attempt's checkpoints and
  // rotation start from nothing, as the uninterrupted search's did.
  const std::string dir = RunDir();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return absl::OkStatus();
  std::string aside = absl::StrCat(dir, ".attempt-", run.attempt - 1);
  for (int k = 2; std::filesystem::exists(aside, ec); ++k) {
    aside = absl::StrCat(dir, ".attempt-", run.attempt - 1, "-", k);
  }
  std::filesystem::rename(dir, aside, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot move the abandoned attempt's ", dir,
                                            " aside to ", aside, ": ", ec.message()));
  }
  LOG(WARNING) << "Trial " << run.number << " runs again: its abandoned attempt's folder is now "
               << aside;
  return absl::OkStatus();
}

absl::Status Trainer::TrainTrial(const hpsearch::TrialRun& run) {
  RETURN_IF_ERROR(ApplyTrialParams(run.params));
  RETURN_IF_ERROR(Train().status());
  if (trial_->objective) return absl::OkStatus();
  // HF run_hp_search_optuna: no evaluation during training -> evaluate once now.
  ASSIGN_OR_RETURN(Metrics metrics, Evaluate());
  ASSIGN_OR_RETURN(trial_->objective, trial_->compute_objective(metrics), "compute_objective");
  return absl::OkStatus();
}

absl::Status Trainer::RecordTrial(hpsearch::Study* study, const hpsearch::TrialRun& run,
                                  hpsearch::TrialState state, std::optional<double> objective) {
  // The run folder's record of the trial (loom: HF writes it into checkpoints only).
  if (is_world_process_zero() && state_.is_hyper_param_search) {
    ASSIGN_OR_RETURN(const TrainerStateLayout layout,
                     TrainerStateLayoutFor(args_.save_for_transformers_version()));
    RETURN_IF_ERROR(base::MakeDirs(RunDir()));
    RETURN_IF_ERROR(state_.SaveToJson(RunDir() + "/trainer_state.json", layout));
  }
  if (study == nullptr) return absl::OkStatus();
  return study->Tell(run, state,
                     state == hpsearch::TrialState::kComplete ? objective : std::nullopt);
}

absl::StatusOr<hpsearch::TrialState> Trainer::RunTrial(const HpSearchOptions& options,
                                                       hpsearch::Study* study,
                                                       const hpsearch::TrialRun& run,
                                                       std::optional<double>* objective,
                                                       absl::Status* failure) {
  // trial_ ends with this function, whichever way it returns.
  struct EndTrial {
    std::optional<TrialContext>& trial;
    ~EndTrial() { trial.reset(); }
  } end{trial_};
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(BeginTrial(options, study, run),
                                          absl::StrCat("starting trial ", run.number)));
  const absl::Status status = TrainTrial(run);
  *objective = trial_->objective;
  *failure = status;
  if (trial_->pruned) {
    // Pruned on every rank at once (the pruner's answer was shared).
    RETURN_IF_ERROR(
        parallel_.AgreeOnStatus(RecordTrial(study, run, hpsearch::TrialState::kPruned, *objective),
                                absl::StrCat("recording trial ", run.number)));
    return hpsearch::TrialState::kPruned;
  }
  if (!status.ok()) {
    // Failed here: this rank enters no other collective (the others may be inside one of
    // training's), rank 0 records the trial FAIL, and the search ends with the error. The other
    // ranks' collectives then fail as this process goes, so the trial fails on every rank.
    if (study != nullptr) {
      const absl::Status recorded = RecordTrial(study, run, hpsearch::TrialState::kFail, {});
      if (!recorded.ok()) LOG(ERROR) << "recording trial " << run.number << ": " << recorded;
    }
    return hpsearch::TrialState::kFail;
  }
  // Every rank finished the trial (one that failed after training's last collective enters
  // none, and this agreement fails when it goes): only then is it recorded complete.
  if (const absl::Status finished =
          parallel_.AgreeOnStatus(absl::OkStatus(), absl::StrCat("finishing trial ", run.number));
      !finished.ok()) {
    *failure = finished;
    if (study != nullptr) {
      const absl::Status recorded = RecordTrial(study, run, hpsearch::TrialState::kFail, {});
      if (!recorded.ok()) LOG(ERROR) << "recording trial " << run.number << ": " << recorded;
    }
    return hpsearch::TrialState::kFail;
  }
  const hpsearch::TrialState state =
      std::isnan(**objective) ? hpsearch::TrialState::kFail : hpsearch::TrialState::kComplete;
  if (state == hpsearch::TrialState::kFail) {
    LOG(WARNING) << "Trial " << run.number << " failed with value nan.";  // optuna's warning
  }
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(RecordTrial(study, run, state, *objective),
                                          absl::StrCat("recording trial ", run.number)));
  return state;
}

absl::StatusOr<BestRun> Trainer::FinishSearch(hpsearch::Study* study,
                                              const HpSearchOptions& options,
                                              const hpsearch::SearchSpace& space) {
  std::string message;
  absl::Status done = absl::OkStatus();
  if (study != nullptr) {
    absl::StatusOr<std::vector<hpsearch::FrozenTrial>> trials = study->Trials();
    done = trials.status();
    if (trials.ok()) {
      std::optional<BestRun> best;
      if (std::optional<hpsearch::FrozenTrial> t =
              hpsearch::Study::BestTrial(*trials, study->options().direction)) {
        best = BestRun{std::to_string(t->number), *t->value, hpsearch::ExternalParams(*t, space),
                       nullptr};
      }
      auto run_name = [&](int64_t number) {
        if (!options.hp_name) return DefaultRunName(number);
        hpsearch::TrialRun r;
        r.number = number;
        r.params = hpsearch::ExternalParams((*trials)[static_cast<size_t>(number)], space);
        return options.hp_name(r);
      };
      const Json report = SearchReport(*trials, space, best, run_name);
      LOG(INFO) << "Hyperparameter search: " << trials->size() << " trials; "
                << (best ? absl::StrCat("best run ", best->run_id, ", objective ", best->objective)
                         : std::string("no trial completed"));
      done = base::WriteFileAtomically(args_.output_dir() + "/hp_search.json",
                                       base::PyJsonDumps(report, 2, false) + "\n");
      message = best ? base::PyJsonDumps(BestRunJson(*best), -1, false) : "null";
    }
  }
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(done, "writing hp_search.json"));
  RETURN_IF_ERROR_CTX(parallel_.BroadcastString(message), "sharing the best run");
  if (message == "null") {
    return absl::FailedPreconditionError(
        "No trials are completed yet: none of the study's trials completed (pruned, failed, or "
        "still running in another process; see hp_search.json)");
  }
  ASSIGN_OR_RETURN(Json j, base::ParsePythonJson(message), "the best run");
  return BestRun{j["run_id"].get<std::string>(), j["objective"].get<double>(), j["hyperparameters"],
                 j["run_summary"]};
}

absl::StatusOr<BestRun> Trainer::HyperparameterSearch(const HpSearchOptions& given) {
  const hpsearch::SearchSpace space = given.hp_space.value_or(DefaultHpSpaceOptuna());
  RETURN_IF_ERROR(CheckSearchOptions(given, space));
  HpSearchOptions options = given;
  if (!options.compute_objective) options.compute_objective = DefaultObjectiveWarning(given);
  // Rank 0 keeps the study (as HF's optuna backend runs it on process 0 only).
  std::unique_ptr<hpsearch::Study> study;
  absl::Status opened = absl::OkStatus();
  if (is_world_process_zero()) {
    absl::StatusOr<std::unique_ptr<hpsearch::Study>> s = OpenStudy(options, space);
    if (s.ok()) {
      study = *std::move(s);
    } else {
      opened = s.status();
    }
  }
  RETURN_IF_ERROR(parallel_.AgreeOnStatus(opened, "opening the study"));
  const args::TrainingArguments base_args = args_;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<hpsearch::TrialRun> run, NextTrial(study.get()));
    if (!run) break;
    std::optional<double> objective;
    absl::Status failure;
    absl::StatusOr<hpsearch::TrialState> state =
        RunTrial(options, study.get(), *run, &objective, &failure);
    args_ = base_args;
    RETURN_IF_ERROR(state.status());
    if (*state == hpsearch::TrialState::kFail && !failure.ok()) {
      return base::Annotate(failure, absl::StrCat("hyperparameter search trial ", run->number));
    }
  }
  return FinishSearch(study.get(), options, space);
}

}  // namespace loom::trainer
