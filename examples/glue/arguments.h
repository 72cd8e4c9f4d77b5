// run_glue's checks of its own two argument groups, before anything is logged or read
// (transformers 4.38 examples' run_glue.py `DataTrainingArguments.__post_init__`, plus loom's
// local-files-only rules):
//   - CheckModelPaths: a --model_name_or_path / --config_name / --tokenizer_name naming nothing
//     on this machine is NotFound saying that loom reads local folders only (a Hub id such as
//     bert-base-uncased is not downloaded) and how to get one.
//   - ValidateArguments: --trust_remote_code and --dataset_name refused; a GLUE --task_name
//     (normalised in `data_args`) needs --data_dir; otherwise --train_file and
//     --validation_file of one extension (csv, json, tsv, jsonl), and --test_file for
//     --do_predict. InvalidArgument naming the flag and the fix.
//
// Example:
//   RETURN_IF_ERROR(CheckModelPaths(model_args));
//   RETURN_IF_ERROR(ValidateArguments(model_args, &data_args, training_args));
#ifndef LOOM_EXAMPLES_GLUE_ARGUMENTS_H_
#define LOOM_EXAMPLES_GLUE_ARGUMENTS_H_

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "examples/glue/run_glue_args.pb.h"

namespace loom::examples::glue_script {

absl::Status CheckModelPaths(const ModelArguments& model_args);
absl::Status ValidateArguments(const ModelArguments& model_args, DataTrainingArguments* data_args,
                               const args::TrainingArguments& training_args);

}  // namespace loom::examples::glue_script

#endif  // LOOM_EXAMPLES_GLUE_ARGUMENTS_H_
