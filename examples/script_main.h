// ScriptMain: the main() of HF-style example scripts (run_glue, run_translation): the CPU memory
// cap from LOOM_CPU_MEMORY_LIMIT, process logging, `bazel run`'s working directory, HF's three
// argument groups parsed (ModelArguments, DataTrainingArguments, TrainingArguments), secrets
// hidden from `ps`, --help, then the script's body.
//
// Contract: exit status 0 on success and for --help; 2 for bad arguments (a parse error, or a
// body error that is InvalidArgument, NotFound or Unimplemented, as argparse errors exit 2);
// 1 when a later step fails. Errors print "<program>: error: <message>" on stderr.
//
// Example:
//   int main(int argc, char** argv) {
//     return loom::examples::ScriptMain<ModelArguments, DataTrainingArguments>(
//         argc, argv, {.program = "run_glue", .description = "..."}, &RunGlue);
//   }
#ifndef LOOM_EXAMPLES_SCRIPT_MAIN_H_
#define LOOM_EXAMPLES_SCRIPT_MAIN_H_

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "args/argv_secrets.h"
#include "args/parser.h"
#include "args/training_args.pb.h"
#include "base/cpu_memory_limit.h"
#include "base/error_line.h"
#include "logging/process_logging.h"

namespace loom::examples {

struct ScriptInfo {
  std::string program;
  std::string description;
  // The script parses Seq2SeqTrainingArguments (predict_with_generate, generation_*, ...).
  bool seq2seq = false;
};

template <typename ModelArgs, typename DataArgs>
int ScriptMain(int argc, char** argv, const ScriptInfo& info,
               absl::Status (*run)(const ModelArgs&, DataArgs, args::TrainingArguments)) {
  // LOOM_CPU_MEMORY_LIMIT: this process's CPU tensor memory capped, as a device's would be.
  if (absl::StatusOr<int64_t> limit = base::InstallCpuMemoryLimitFromEnv(); !limit.ok()) {
    base::PrintErrorLine(info.program, limit.status().message());
    return 2;
  }
  logging::InitProcessLogging(argv[0]);
  // `bazel run` starts us in the runfiles tree; relative paths are the user's.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (::chdir(wd) != 0) std::cerr << info.program << ": cannot enter " << wd << "\n";
  }
  ModelArgs model_args;
  DataArgs data_args;
  args::TrainingArguments training_args;
  args::ArgParser parser(
      {.program = info.program, .description = info.description, .seq2seq = info.seq2seq});
  parser.AddGroup("ModelArguments", &model_args)
      .AddGroup("DataTrainingArguments", &data_args)
      .AddGroup("TrainingArguments", &training_args);
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) {
    base::PrintErrorLine(info.program, s.message());
    return 2;
  }
  // --hub_token & co. off `ps` from here on (the parser holds its own copies).
  args::HideSecretArgs(argc, argv);
  if (parser.help_requested()) {
    std::cout << parser.Help();
    return 0;
  }
  if (absl::Status s = run(model_args, data_args, training_args); !s.ok()) {
    base::PrintErrorLine(info.program, s.message());
    return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsUnimplemented(s) ? 2 : 1;
  }
  return 0;
}

}  // namespace loom::examples

#endif  // LOOM_EXAMPLES_SCRIPT_MAIN_H_
