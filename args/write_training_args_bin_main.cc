// Test helper: resolves the given command line and writes training_args.bin to $1.
#include <iostream>
#include <vector>

#include "args/parser.h"
#include "args/training_args.h"
#include "args/training_args_file.h"
#include "logging/process_logging.h"

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc < 2) return 2;
  loom::args::TrainingArguments a;
  loom::args::ArgParser p({.program = "write_training_args_bin"});
  p.AddGroup("TrainingArguments", &a);
  std::vector<std::string> args(argv + 2, argv + argc);
  absl::Status s = p.Parse(args);
  // The file format of every field, refused ones (--fsdp, --hub_token) included.
  loom::args::PostInitOptions options;
  options.reject_unsupported = false;
  if (s.ok()) s = loom::args::PostInit(&a, options).status();
  if (s.ok()) s = loom::args::SaveTrainingArgs(a, argv[1]);
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}
