// run_glue: fine-tunes a BERT sequence classifier on a GLUE task or on csv/tsv/json(l) files
// with loom's Trainer, as HF's examples/pytorch/text-classification/run_glue.py does.
//
//   ./bazelw run //examples/glue:run_glue               # the embedded demo (see run_glue.h)
//   ./bazelw run //examples/glue:run_glue -- --model_name_or_path /models/bert-base-uncased
//       --task_name mrpc --data_dir /data/glue/MRPC --do_train --do_eval
//       --output_dir /tmp/mrpc   (one command line)
//
// Exit status 2 for bad arguments, 1 when a later step fails.
#include "examples/glue/run_glue.h"
#include "examples/glue/run_glue_args.pb.h"
#include "examples/script_main.h"

int main(int argc, char** argv) {
  using namespace loom::examples::glue_script;  // NOLINT
  return loom::examples::ScriptMain<ModelArguments, DataTrainingArguments>(
      argc, argv,
      {.program = "run_glue",
       .description = "Fine-tunes BERT for sequence classification on GLUE or your own files "
                      "(HF run_glue.py on loom). With no arguments: a built-in demo."},
      &RunGlue);
}
