// run_clm's checks of its own two argument groups, before anything is logged or read
// (transformers 4.41 examples' run_clm.py `ModelArguments.__post_init__` and
// `DataTrainingArguments.__post_init__`, plus loom's local-files-only rules). InvalidArgument
// (Unimplemented for what loom does not implement) naming the flag and the fix:
//   - --trust_remote_code, --dataset_name / --dataset_config_name (no Hub access) and
//     --streaming are refused;
//   - HF's "--config_overrides can't be used in combination with --config_name or
//     --model_name_or_path" and "Need either a dataset name or a training/validation file.";
//   - --train_file / --validation_file must end in .txt, .json, .jsonl or .csv (HF's
//     "`train_file` should be a csv, a json or a txt file.", JSON Lines added);
//   - --model_type must be "llama" when the model is built from scratch without --config_name;
//   - --torch_dtype other than float32 is Unimplemented (loom trains float32 weights; --bf16 /
//     --fp16 give mixed precision);
//   - without --tokenizer_name or --model_name_or_path: HF's "You are instantiating a new
//     tokenizer from scratch." (the embedded demo, `builtin_tokenizer`, trains its own);
//   - --do_train needs --train_file; --do_eval needs --validation_file or a train file to split
//     (--validation_split_percentage in 1..99); --block_size >= 1.
//
//
// ApplyConfigOverrides(config, "k=v,k=v") is PretrainedConfig.update_from_string on a config's
// JSON object: each key must exist (HF's "key K isn't in the original config dict"); the value
// is parsed by the current value's type — bool (true/1/y/yes, false/0/n/no, any case), int,
// float — or kept as a string; null, list and object values cannot be overridden (HF's "You
// can only update int, float, bool or string values in the config").
//
// Example:
//   RETURN_IF_ERROR(ValidateArguments(model_args, data_args, training_args, false));
#ifndef LOOM_EXAMPLES_CLM_ARGUMENTS_H_
#define LOOM_EXAMPLES_CLM_ARGUMENTS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "args/training_args.pb.h"
#include "examples/clm/run_clm_args.pb.h"

namespace loom::examples::clm {

absl::Status ValidateArguments(const ModelArguments& model_args,
                               const DataTrainingArguments& data_args,
                               const args::TrainingArguments& training_args,
                               bool builtin_tokenizer);

absl::StatusOr<nlohmann::json> ApplyConfigOverrides(nlohmann::json config,
                                                    const std::string& overrides);

}  // namespace loom::examples::clm

#endif  // LOOM_EXAMPLES_CLM_ARGUMENTS_H_
