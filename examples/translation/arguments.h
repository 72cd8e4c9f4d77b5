// run_translation's checks of its own two argument groups, before anything is logged or read
// (transformers 4.41 examples' run_translation.py `DataTrainingArguments.__post_init__`, plus
// loom's local-files-only rules). InvalidArgument naming the flag and the fix:
//   - --trust_remote_code, --dataset_name / --dataset_config_name (no Hub access) and
//     --forced_bos_token (only multilingual tokenizers have language codes; loom's T5 tokenizer
//     has none, and HF would ignore the flag for it) are refused;
//   - HF's "Need either a dataset name or a training/validation file." and "Need to specify the
//     source language and the target language.";
//   - --train_file / --validation_file / --test_file must end in .json or .jsonl (HF's
//     "`train_file` should be a jsonlines file.");
//   - the split each --do_* flag uses must be given (HF: "--do_train requires a train dataset");
//   - a --model_name_or_path (a pretrained T5) without --source_prefix: HF's t5 warning, as an
//     error saying that --source_prefix '' trains without one;
//   - without --model_name_or_path the tiny T5 is trained from scratch, so --do_train is needed;
//   - --val_max_target_length defaults to --max_target_length (set in `data_args`).
//
// Example:
//   RETURN_IF_ERROR(ValidateArguments(model_args, &data_args, training_args));
#ifndef LOOM_EXAMPLES_TRANSLATION_ARGUMENTS_H_
#define LOOM_EXAMPLES_TRANSLATION_ARGUMENTS_H_

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "examples/translation/run_translation_args.pb.h"

namespace loom::examples::translation {

absl::Status ValidateArguments(const ModelArguments& model_args, DataTrainingArguments* data_args,
                               const args::TrainingArguments& training_args);

}  // namespace loom::examples::translation

#endif  // LOOM_EXAMPLES_TRANSLATION_ARGUMENTS_H_
