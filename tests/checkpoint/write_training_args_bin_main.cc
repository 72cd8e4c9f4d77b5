// Test helper: resolves the command line after $1 $2 and writes training_args.bin to $1 and
// the same arguments' to_json_string() (args::ToJsonString) to $2, which the Python check
// compares the unpickled object with.
#include <iostream>
#include <vector>

#include "args/parser.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "checkpoint/training_args_file.h"
#include "logging/process_logging.h"

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc < 3) return 2;
  loom::args::TrainingArguments a;
  loom::args::ArgParser p({.program = "write_training_args_bin"});
  p.AddGroup("TrainingArguments", &a);
  std::vector<std::string> args(argv + 3, argv + argc);
  absl::Status s = p.Parse(args);
  // The file format of every field, refused ones (--fsdp, --hub_token) included.
  loom::args::PostInitOptions options;
  options.reject_unsupported = false;
  if (s.ok()) s = loom::args::PostInit(&a, options).status();
  if (s.ok()) s = loom::checkpoint::SaveTrainingArgs(a, argv[1]);
  if (s.ok()) s = loom::base::WriteFileAtomically(argv[2], loom::args::ToJsonString(a));
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}
