// run_translation: fine-tunes a T5 on JSON Lines translation pairs with loom's Seq2SeqTrainer,
// as HF's examples/pytorch/translation/run_translation.py does.
//
//   ./bazelw run //examples:run_translation             # the embedded demo (see run_translation.h)
//   ./bazelw run //examples:run_translation -- --model_name_or_path /models/t5-small
//       --source_lang en --target_lang ro --source_prefix "translate English to Romanian: "
//       --train_file wmt16/train.json --validation_file wmt16/validation.json
//       --do_train --do_eval --predict_with_generate --output_dir /tmp/t5   (one command line)
//
// Exit status 2 for bad arguments, 1 when a later step fails.
#include "examples/script_main.h"
#include "examples/translation/run_translation.h"
#include "examples/translation/run_translation_args.pb.h"

int main(int argc, char** argv) {
  using namespace loom::examples::translation;  // NOLINT
  return loom::examples::ScriptMain<ModelArguments, DataTrainingArguments>(
      argc, argv,
      {.program = "run_translation",
       .description = "Fine-tunes T5 for translation on JSON Lines files (HF run_translation.py "
                      "on loom). With no arguments: a built-in demo.",
       .seq2seq = true},
      &RunTranslation);
}
