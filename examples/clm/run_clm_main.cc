// run_clm: trains or fine-tunes a causal language model (Llama) on text files with loom's
// Trainer, as HF's examples/pytorch/language-modeling/run_clm.py does.
//
//   ./bazelw run //examples:run_clm          # the embedded demo (see run_clm.h)
//   ./bazelw run //examples:run_clm -- --model_name_or_path /models/TinyLlama-1.1B
//       --train_file data/train.txt --validation_file data/valid.txt --block_size 512
//       --do_train --do_eval --output_dir /tmp/clm        (one command line)
//
// Exit status 2 for bad arguments, 1 when a later step fails.
#include "examples/clm/run_clm.h"
#include "examples/clm/run_clm_args.pb.h"
#include "examples/script_main.h"

int main(int argc, char** argv) {
  using namespace loom::examples::clm;  // NOLINT
  return loom::examples::ScriptMain<ModelArguments, DataTrainingArguments>(
      argc, argv,
      {.program = "run_clm",
       .description = "Trains a causal language model (Llama) on text files (HF run_clm.py on "
                      "loom). With no arguments: a built-in demo."},
      &RunClm);
}
