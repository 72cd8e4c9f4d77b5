#include "examples/glue/hp_search_flags.h"

#include <iostream>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "hpsearch/distribution.h"

namespace loom::examples::glue_script {
namespace {

// The --hp_* flags that mean something only with --hp_search_trials.
absl::Status CheckNoSearchFlags(const DataTrainingArguments& d) {
  const std::pair<bool, const char*> flags[] = {
      {d.has_hp_backend(), "--hp_backend"},     {d.has_hp_space(), "--hp_space"},
      {d.has_hp_direction(), "--hp_direction"}, {d.has_hp_journal(), "--hp_journal"},
      {d.has_hp_pruner(), "--hp_pruner"},       {d.has_hp_seed(), "--hp_seed"}};
  for (const auto& [given, flag] : flags) {
    if (given) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag,
                       " was given without --hp_search_trials: add --hp_search_trials N to run a "
                       "hyperparameter search of N trials, or drop ",
                       flag));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<hpsearch::SearchSpace> ReadSpace(const std::string& value) {
  std::string text = value;
  const size_t first = value.find_first_not_of(" \t\r\n");
  const bool inline_json = first != std::string::npos && value[first] == '{';
  if (!inline_json) {
    ASSIGN_OR_RETURN(text, base::ReadFile(value),
                     "--hp_space (inline JSON starting with \"{\", or a JSON file)");
  }
  absl::StatusOr<hpsearch::SearchSpace> space = hpsearch::ParseSearchSpace(text);
  if (!space.ok()) {
    return base::Annotate(space.status(),
                          inline_json ? "--hp_space" : absl::StrCat("--hp_space ", value));
  }
  return space;
}

}  // namespace

absl::StatusOr<std::optional<trainer::HpSearchOptions>> HpSearchFromFlags(
    const DataTrainingArguments& d) {
  if (!d.has_hp_search_trials()) {
    RETURN_IF_ERROR(CheckNoSearchFlags(d));
    return std::nullopt;
  }
  if (d.hp_search_trials() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hp_search_trials must be at least 1, got ", d.hp_search_trials()));
  }
  trainer::HpSearchOptions o;
  o.n_trials = d.hp_search_trials();
  o.backend = d.hp_backend();
  RETURN_IF_ERROR_CTX(trainer::ResolveBackend(o.backend).status(), "--hp_backend");
  o.direction = {d.hp_direction()};
  RETURN_IF_ERROR_CTX(trainer::ResolveDirection(o.direction).status(), "--hp_direction");
  if (d.has_hp_space()) {
    ASSIGN_OR_RETURN(o.hp_space, ReadSpace(d.hp_space()));
  }
  o.journal = d.hp_journal();
  o.pruner = d.hp_pruner();
  if (d.has_hp_seed()) {
    if (d.hp_seed() < 0 || d.hp_seed() > int64_t{UINT32_MAX}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--hp_seed must be in [0, 2**32 - 1] (numpy's RandomState seeds), got ", d.hp_seed()));
    }
    o.seed = static_cast<uint32_t>(d.hp_seed());
  }
  // The CLI names runs and trials as HF's folders are named: run-<number>.
  o.hp_name = [](const hpsearch::TrialRun& run) { return absl::StrCat("run-", run.number); };
  return o;
}

absl::Status CheckSearchTrainingArgs(const args::TrainingArguments& t) {
  if (!t.do_train() || !t.do_eval()) {
    return absl::InvalidArgumentError(
        "--hp_search_trials trains and evaluates every trial (the objective comes from the "
        "evaluation): give --do_train and --do_eval");
  }
  if (t.do_predict()) {
    return absl::InvalidArgumentError(
        "--do_predict with --hp_search_trials: a search predicts nothing; run the best run's "
        "hyperparameters again with --do_predict");
  }
  if (t.has_resume_from_checkpoint() && !t.resume_from_checkpoint().empty()) {
    return absl::InvalidArgumentError(
        "--resume_from_checkpoint with --hp_search_trials: a search resumes from its journal "
        "(start it again with the same flags)");
  }
  if (t.has_overwrite_output_dir() && t.overwrite_output_dir()) {
    return absl::InvalidArgumentError(
        "--overwrite_output_dir with --hp_search_trials: a search resumes from its journal "
        "(--hp_journal, default output_dir/hp_search.journal) and does not discard it; to start "
        "over, give another --output_dir or --hp_journal");
  }
  return absl::OkStatus();
}

absl::Status RunSearchAndReport(trainer::Trainer& trainer,
                                const trainer::HpSearchOptions& options) {
  ASSIGN_OR_RETURN(trainer::BestRun best, trainer.HyperparameterSearch(options));
  if (!trainer.is_world_process_zero()) return absl::OkStatus();
  const std::string path = trainer.args().output_dir() + "/hp_search.json";
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  ASSIGN_OR_RETURN(nlohmann::ordered_json report, base::ParsePythonJson(text), path);
  std::cout << "***** hyperparameter search (" << report["trials"].size() << " trials) *****\n"
            << trainer::SearchTable(report) << "BestRun(run_id='" << best.run_id
            << "', objective=" << nlohmann::ordered_json(best.objective).dump()
            << ", hyperparameters=" << best.hyperparameters.dump() << ")\n"
            << "wrote " << path << "\n"
            << std::flush;
  return absl::OkStatus();
}

}  // namespace loom::examples::glue_script
