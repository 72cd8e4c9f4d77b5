// run_translation: HF transformers' examples/pytorch/translation/run_translation.py (4.41) on
// loom — fine-tunes a T5 (T5ForConditionalGeneration) on JSON Lines translation pairs with the
// Seq2SeqTrainer, evaluates / predicts with generation (BLEU, gen_len) and writes HF's output
// folder, generated_predictions.txt included. //examples/translation:run_translation (also
// //examples:run_translation) is the command-line program; RunTranslation is its body.
//
// Contract:
//   - Arguments are HF's three groups: ModelArguments and DataTrainingArguments
//     (run_translation_args.proto) and Seq2SeqTrainingArguments (args::TrainingArguments).
//   - The embedded demo: with no --model_name_or_path and no data files, ApplyEmbeddedDefaults
//     fills what the user left unset (output_dir /tmp/loom_run_translation, do_train, do_eval and
//     do_predict when no do_* flag was given, predict_with_generate, en -> ro, a source prefix,
//     short lengths and the demo's hyper-parameters) and RunTranslation writes a generated
//     English -> Romanian task (synthetic_task.h) to <output_dir>/synthetic_data, trains a
//     SentencePiece model and a tiny T5 from scratch, and prints the BLEU of the untrained and
//     the trained model.
//   - Without --model_name_or_path but with data files, the same tiny T5 and a SentencePiece
//     model trained on the training file (its sources with --source_prefix, and its targets)
//     are trained from scratch.
//   - The demo's untrained evaluation is logged with the metric prefix "untrained" (so it is in
//     trainer_state.json's log_history, as any evaluate call is).
//   - Errors: InvalidArgument for bad arguments and data (named flag or file:line and the fix),
//     NotFound for missing model folders, others from the libraries.
#ifndef LOOM_EXAMPLES_TRANSLATION_RUN_TRANSLATION_H_
#define LOOM_EXAMPLES_TRANSLATION_RUN_TRANSLATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "examples/translation/run_translation_args.pb.h"

namespace loom::examples::translation {

inline constexpr char kEmbeddedOutputDir[] = "/tmp/loom_run_translation";

// True when neither a model nor any data file was given.
bool IsEmbeddedDemo(const ModelArguments& model_args, const DataTrainingArguments& data_args);

// Fills the unset arguments of the embedded demo; returns one line per value it chose.
std::vector<std::string> ApplyEmbeddedDefaults(DataTrainingArguments* data_args,
                                               args::TrainingArguments* training_args);

absl::Status RunTranslation(const ModelArguments& model_args, DataTrainingArguments data_args,
                            args::TrainingArguments training_args);

}  // namespace loom::examples::translation

#endif  // LOOM_EXAMPLES_TRANSLATION_RUN_TRANSLATION_H_
