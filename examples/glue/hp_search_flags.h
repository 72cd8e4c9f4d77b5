// run_glue's hyperparameter-search flags (--hp_search_trials, --hp_backend, --hp_space,
// --hp_direction, --hp_journal, --hp_pruner, --hp_seed; run_glue_args.proto) as the Trainer's
// HpSearchOptions (trainer/hp_search.h), and the search's command-line ending.
//
// Contract:
//   - HpSearchFromFlags: nullopt without --hp_search_trials; an --hp_* flag given without it is
//     InvalidArgument (it would do nothing). --hp_space is inline JSON (it starts with "{") or a
//     JSON file's path (NotFound when missing); the space, the backend and the direction are
//     checked here, before any data is read.
//   - RunSearchAndReport: Trainer::HyperparameterSearch, then (main process) the results table
//     and the best run on stdout, read back from output_dir/hp_search.json.
//
// Example:
//   ASSIGN_OR_RETURN(std::optional<trainer::HpSearchOptions> hp, HpSearchFromFlags(data_args));
//   if (hp) return RunSearchAndReport(*trainer, *hp);
#ifndef LOOM_EXAMPLES_GLUE_HP_SEARCH_FLAGS_H_
#define LOOM_EXAMPLES_GLUE_HP_SEARCH_FLAGS_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "examples/glue/run_glue_args.pb.h"
#include "trainer/hp_search.h"
#include "trainer/trainer.h"

namespace loom::examples::glue_script {

absl::StatusOr<std::optional<trainer::HpSearchOptions>> HpSearchFromFlags(
    const DataTrainingArguments& data_args);

// What a search needs of the TrainingArguments: --do_train and --do_eval (every trial trains and
// is scored by evaluation); --do_predict, --resume_from_checkpoint and --overwrite_output_dir
// are refused (a search predicts nothing, and resumes from its journal, which
// --overwrite_output_dir would not discard).
absl::Status CheckSearchTrainingArgs(const args::TrainingArguments& training_args);

absl::Status RunSearchAndReport(trainer::Trainer& trainer, const trainer::HpSearchOptions& options);

}  // namespace loom::examples::glue_script

#endif  // LOOM_EXAMPLES_GLUE_HP_SEARCH_FLAGS_H_
