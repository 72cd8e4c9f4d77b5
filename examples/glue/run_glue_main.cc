// run_glue: fine-tunes a BERT sequence classifier on a GLUE task or on csv/tsv/json(l) files
// with loom's Trainer, as HF's examples/pytorch/text-classification/run_glue.py does.
//
//   ./bazelw run //examples/glue:run_glue               # the embedded demo (see run_glue.h)
//   ./bazelw run //examples/glue:run_glue -- --model_name_or_path /models/bert-base-uncased
//       --task_name mrpc --data_dir /data/glue/MRPC --do_train --do_eval
//       --output_dir /tmp/mrpc   (one command line)
//
// Exit status 2 for bad arguments, 1 when a later step fails.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "absl/status/status.h"
#include "args/argv_secrets.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "base/cpu_memory_limit.h"
#include "examples/glue/run_glue.h"
#include "examples/glue/run_glue_args.pb.h"
#include "logging/process_logging.h"

int main(int argc, char** argv) {
  // LOOM_CPU_MEMORY_LIMIT: this process's CPU tensor memory capped, as a device's would be.
  if (absl::StatusOr<int64_t> limit = loom::base::InstallCpuMemoryLimitFromEnv(); !limit.ok()) {
    std::cerr << "run_glue: error: " << limit.status().message() << "\n";
    return 2;
  }
  loom::logging::InitProcessLogging(argv[0]);
  // `bazel run` starts us in the runfiles tree; relative paths are the user's.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (::chdir(wd) != 0) std::cerr << "run_glue: cannot enter " << wd << "\n";
  }
  loom::examples::glue_script::ModelArguments model_args;
  loom::examples::glue_script::DataTrainingArguments data_args;
  loom::args::TrainingArguments training_args;
  loom::args::ArgParser parser(
      {.program = "run_glue",
       .description = "Fine-tunes BERT for sequence classification on GLUE or your own files "
                      "(HF run_glue.py on loom). With no arguments: a built-in demo."});
  parser.AddGroup("ModelArguments", &model_args)
      .AddGroup("DataTrainingArguments", &data_args)
      .AddGroup("TrainingArguments", &training_args);
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) {
    std::cerr << "run_glue: error: " << s.message() << "\n";
    return 2;
  }
  // --hub_token & co. off `ps` from here on (the parser holds its own copies).
  loom::args::HideSecretArgs(argc, argv);
  if (parser.help_requested()) {
    std::cout << parser.Help();
    return 0;
  }
  if (absl::Status s = loom::examples::glue_script::RunGlue(model_args, data_args, training_args);
      !s.ok()) {
    std::cerr << "run_glue: error: " << s.message() << "\n";
    // Bad arguments (a wrong value, a missing config file, a setting loom does not implement)
    // exit 2, as argparse errors do.
    return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsUnimplemented(s) ? 2 : 1;
  }
  return 0;
}
