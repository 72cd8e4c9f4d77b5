// HfArgumentParser semantics over protobuf messages: one command line fills several
// argument groups (TrainingArguments plus a program's own messages), driven entirely by
// reflection and each field's (loom.args.spec) options (field_spec.proto).
//
// Accepted forms (as HF's HfArgumentParser / argparse):
//   --name value   --name=value   --name-with-dashes value
//   bools: bare --flag (true), --flag true|false|yes|no|t|f|y|n|1|0 (any case),
//          --no_flag for bools whose default is true
//   lists: --report_to tensorboard wandb   --fsdp "full_shard auto_wrap"  (split on spaces)
//   a lone `args.json` as the whole command line: its keys are field names
//   --help / -h: sets help_requested(); Help() lists every field with doc and default
// A flag given twice keeps the last value. Unknown flags are InvalidArgument naming the
// flag and the closest known one; bad values name the flag and the accepted values.
//
// Example:
//   TrainingArguments targs; ModelArguments margs;
//   ArgParser parser({.program = "run_glue"});
//   parser.AddGroup("TrainingArguments", &targs).AddGroup("ModelArguments", &margs);
//   RETURN_IF_ERROR(parser.Parse(args));           // args excludes argv[0]
//   if (parser.help_requested()) { std::cout << parser.Help(); return 0; }
#ifndef LOOM_ARGS_PARSER_H_
#define LOOM_ARGS_PARSER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace loom::args {

class ArgParser {
 public:
  struct Options {
    std::string program = "program";
    std::string description;
    // Accept fields marked seq2seq (Seq2SeqTrainingArguments). Off: they are unknown.
    bool seq2seq = false;
  };

  explicit ArgParser(Options options);

  // Registers a message to fill; `message` must outlive the parser. Field names must be
  // unique across groups (checked by Parse).
  ArgParser& AddGroup(std::string title, google::protobuf::Message* message);

  // Parses the arguments (without the program name) into the groups.
  absl::Status Parse(const std::vector<std::string>& args);
  absl::Status Parse(int argc, const char* const* argv);  // skips argv[0]

  // Fills the groups from a JSON object whose keys are field names (HF parse_json_file /
  // parse_dict). `source` names the file in errors.
  absl::Status ParseJson(const nlohmann::ordered_json& object, const std::string& source);

  bool help_requested() const { return help_requested_; }
  std::string Help() const;

 private:
  struct Target {
    google::protobuf::Message* message;
    const google::protobuf::FieldDescriptor* field;
  };
  absl::Status CheckGroups() const;
  bool Find(const std::string& name, Target* target) const;
  std::vector<std::string> AllFlagNames() const;
  absl::Status UnknownFlag(const std::string& flag) const;
  bool Visible(const google::protobuf::FieldDescriptor* field) const;

  Options options_;
  std::vector<std::pair<std::string, google::protobuf::Message*>> groups_;
  bool help_requested_ = false;
};

// Python's `string_to_bool` of HfArgumentParser: yes/true/t/y/1 and no/false/f/n/0, any case.
absl::Status ParsePythonBool(const std::string& text, bool* out);

// Levenshtein distance (used for "did you mean" suggestions).
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate closest to `name` by EditDistance, if closer than `below` (the first of equally
// close ones); "" when none is. Every "did you mean" of loom's parsers picks its name here.
std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates,
                        size_t below = 4);

}  // namespace loom::args

#endif  // LOOM_ARGS_PARSER_H_
