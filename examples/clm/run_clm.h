// run_clm: HF transformers' examples/pytorch/language-modeling/run_clm.py (4.41) on loom —
// trains or fine-tunes a causal LM (LlamaForCausalLM) on text, JSON Lines or CSV files with
// the Trainer: tokenize, group_texts into --block_size blocks, train, evaluate (eval_loss,
// eval_accuracy, perplexity), and HF's output folder. //examples/clm:run_clm (also
// //examples:run_clm) is the command-line program; RunClm is its body.
//
// Contract:
//   - Arguments are HF's three groups: ModelArguments and DataTrainingArguments
//     (run_clm_args.proto) and TrainingArguments.
//   - The embedded demo: with no --model_name_or_path, --config_name, --tokenizer_name and no
//     data files, ApplyEmbeddedDefaults fills what the user left unset (output_dir
//     /tmp/loom_run_clm, do_train and do_eval when no do_* flag was given, --block_size 64 and
//     the demo's hyper-parameters) and RunClm writes a generated corpus (synthetic_corpus.h) to
//     <output_dir>/synthetic_data/{train,validation}.txt, trains a SentencePiece tokenizer in
//     Llama's layout and a tiny Llama from scratch, and prints the perplexity of the untrained
//     and the trained model.
//   - From scratch with data files: --model_type llama (its LlamaConfig defaults, with
//     --config_overrides) or --config_name, and --tokenizer_name.
//   - The demo's untrained evaluation is logged with the metric prefix "untrained".
//   - Errors: InvalidArgument for bad arguments and data (named flag or file and the fix),
//     NotFound for missing folders, Unimplemented for what loom does not do, others from the
//     libraries.
#ifndef LOOM_EXAMPLES_CLM_RUN_CLM_H_
#define LOOM_EXAMPLES_CLM_RUN_CLM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "examples/clm/run_clm_args.pb.h"

namespace loom::examples::clm {

inline constexpr char kEmbeddedOutputDir[] = "/tmp/loom_run_clm";

bool IsEmbeddedDemo(const ModelArguments& model_args, const DataTrainingArguments& data_args);

std::vector<std::string> ApplyEmbeddedDefaults(ModelArguments* model_args,
                                               DataTrainingArguments* data_args,
                                               args::TrainingArguments* training_args);

absl::Status RunClm(const ModelArguments& model_args, DataTrainingArguments data_args,
                    args::TrainingArguments training_args);

}  // namespace loom::examples::clm

#endif  // LOOM_EXAMPLES_CLM_RUN_CLM_H_
