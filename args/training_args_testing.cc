#include "args/training_args_testing.h"

#include "args/parser.h"
#include "base/status_macros.h"

namespace loom::args::testing {

absl::StatusOr<TrainingArguments> ResolveForTest(std::vector<std::string> flags,
                                                 std::vector<std::string>* warnings,
                                                 bool reject_unsupported) {
  TrainingArguments args;
  ArgParser parser({.program = "test"});
  parser.AddGroup("TrainingArguments", &args);
  flags.insert(flags.begin(), {"--output_dir", "out"});
  RETURN_IF_ERROR(parser.Parse(flags));
  PostInitOptions options;
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  options.hostname = "host";
  options.reject_unsupported = reject_unsupported;
  ASSIGN_OR_RETURN(std::vector<std::string> w, PostInit(&args, options));
  if (warnings != nullptr) *warnings = std::move(w);
  return args;
}

}  // namespace loom::args::testing
