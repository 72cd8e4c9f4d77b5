#include "args/training_args_testing.h"

#include "google/protobuf/util/message_differencer.h"

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

::testing::AssertionResult EquivalentArgs(const TrainingArguments& a, const TrainingArguments& b) {
  google::protobuf::util::MessageDifferencer diff;
  diff.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
  std::string report;
  diff.ReportDifferencesToString(&report);
  if (diff.Compare(a, b)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << report;
}

}  // namespace loom::args::testing
