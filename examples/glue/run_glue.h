// run_glue: HF transformers' examples/pytorch/text-classification/run_glue.py (4.38-4.41) on
// loom — fine-tunes a BERT sequence classifier on a GLUE task or on csv/tsv/json(l) files with
// the Trainer, and writes HF's output folder. //examples/glue:run_glue (also reachable as
// //trainer:run_glue) is the command-line program; RunGlue is its body, so tests and other
// programs can call it.
//
// Contract:
//   - Arguments are HF's three groups (ModelArguments, DataTrainingArguments in
//     run_glue_args.proto, TrainingArguments) plus --data_dir (the GLUE distribution's .tsv
//     folder for --task_name; loom reads local files only).
//   - The embedded demo: with no --model_name_or_path and no data (--task_name, --data_dir,
//     --train_file, --validation_file, --test_file all unset), ApplyEmbeddedDefaults fills
//     what the user left unset — output_dir /tmp/loom_run_glue, do_train and do_eval (when no
//     do_* flag was given), overwrite_output_dir (not for a hyperparameter search, which
//     resumes from its journal), and the demo's training hyper-parameters —
//     and RunGlue trains a tiny built-in BERT on a generated SST-2-format task
//     (examples/glue/synthetic_task.h) written to <output_dir>/synthetic_data.
//   - Errors: InvalidArgument for bad arguments (named flag and the fix), others from the
//     libraries (missing files, shapes, ...).
//
// run_glue.cc is HF's run_glue.py, one script read top to bottom as its named stages, like the
// Python original; the checks of its own argument groups are arguments.h's.
#ifndef LOOM_EXAMPLES_GLUE_RUN_GLUE_H_
#define LOOM_EXAMPLES_GLUE_RUN_GLUE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "examples/glue/run_glue_args.pb.h"

namespace loom::examples::glue_script {

inline constexpr char kEmbeddedOutputDir[] = "/tmp/loom_run_glue";

// True when neither a model nor any data was given.
bool IsEmbeddedDemo(const ModelArguments& model_args, const DataTrainingArguments& data_args);

// Fills the unset arguments of the embedded demo; returns one line per value it chose.
std::vector<std::string> ApplyEmbeddedDefaults(DataTrainingArguments* data_args,
                                               args::TrainingArguments* training_args);

absl::Status RunGlue(const ModelArguments& model_args, DataTrainingArguments data_args,
                     args::TrainingArguments training_args);

}  // namespace loom::examples::glue_script

#endif  // LOOM_EXAMPLES_GLUE_RUN_GLUE_H_
