// show_args: parses any TrainingArguments command line and prints the resolved arguments as
// JSON with the keys and value formats of HF's TrainingArguments.to_json_string().
//
//   bazel run //tools:show_args -- --output_dir out --learning_rate 2e-5
//       --fsdp "full_shard auto_wrap" --log_on_each_node 0    (one command line)
//   bazel run //tools:show_args -- --support_table
//       what loom does with each field: implemented, not applicable (ignored with a warning),
//       unsupported or not yet (refused), as tab-separated lines (args/field_support.h)
//
// It refuses exactly what a run refuses before any work (runtime::PreflightRun: the precision
// for this machine, the --deepspeed config, --fsdp's rules; as one process unless WORLD_SIZE
// says otherwise), after HF's __post_init__ checks. Warnings (deprecations) go to stderr; errors
// exit with status 2 like argparse. //args:show_args is the same program.
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "args/field_support.h"
#include "args/parser.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "base/error_line.h"
#include "logging/log_level.h"
#include "logging/process_logging.h"
#include "runtime/run_setup.h"

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  // `bazel run` starts us in the runfiles tree; relative paths are the user's.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (::chdir(wd) != 0) std::cerr << "show_args: cannot enter " << wd << "\n";
  }
  if (argc == 2 && std::string(argv[1]) == "--support_table") {
    std::cout << loom::args::SupportTableTsv();
    return 0;
  }
  loom::args::TrainingArguments args;
  loom::args::ArgParser parser({.program = "show_args",
                                .description = "Prints the resolved TrainingArguments as JSON."});
  parser.AddGroup("TrainingArguments", &args);
  absl::Status status = parser.Parse(argc, argv);
  if (!status.ok()) {
    loom::base::PrintErrorLine("show_args", status.message());
    return 2;
  }
  if (parser.help_requested()) {
    std::cout << parser.Help();
    return 0;
  }
  auto warnings = loom::args::PostInit(&args);
  if (!warnings.ok()) {
    loom::base::PrintErrorLine("show_args", warnings.status().message());
    return 2;
  }
  for (const auto& w : *warnings) std::cerr << "warning: " << w << "\n";
  const loom::logging::ProcessPlacement here = loom::logging::PlacementFromEnvironment();
  if (absl::Status run =
          loom::runtime::PreflightRun(args, here.local_process_index, here.world_size).status();
      !run.ok()) {
    loom::base::PrintErrorLine("show_args", run.message());
    return 2;
  }
  std::cout << loom::args::ToJsonString(args) << "\n";
  return 0;
}
