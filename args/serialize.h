// HF-format serialization of argument messages (TrainingArguments and friends):
//   ToDict        = HF's TrainingArguments.to_dict(): every field in declaration order, Python
//                   values (None -> null, dicts as objects), and every field whose name ends
//                   in "_token" replaced by "<NAME_UPPER>" — tokens never leave the process.
//   ToJsonString  = HF's to_json_string(): json.dumps(to_dict(), indent=2), ASCII-escaped.
//   FromDict      = the inverse, used for the JSON form, training_args.bin and `args.json`
//                   command lines. Token placeholders read back as unset.
// Round trip: FromDict(ToDict(a)) == a for any resolved `a` whose tokens are unset and whose
// loom-only fields ((spec).loom_only, e.g. save_for_transformers_version) are at their
// defaults; with SerializeOptions::loom_fields on both sides, for any `a` whose tokens are unset.
//
// Example:
//   std::cout << ToJsonString(args) << "\n";
//   TrainingArguments back;
//   RETURN_IF_ERROR(FromJsonString(text, "trainer_args.json", &back));
#ifndef LOOM_ARGS_SERIALIZE_H_
#define LOOM_ARGS_SERIALIZE_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace loom::args {

struct SerializeOptions {
  bool seq2seq = false;      // include Seq2SeqTrainingArguments' fields
  bool loom_fields = false;  // include loom's own fields ((spec).loom_only), which HF has not
};

nlohmann::ordered_json ToDict(const google::protobuf::Message& message,
                              const SerializeOptions& options = {});
std::string ToJsonString(const google::protobuf::Message& message,
                         const SerializeOptions& options = {});

// Fills `message` (cleared first) from a dict as ToDict writes it; `source` names the origin
// in errors. Unknown keys are InvalidArgument naming the key.
absl::Status FromDict(const nlohmann::ordered_json& dict, const std::string& source,
                      google::protobuf::Message* message, const SerializeOptions& options = {});
absl::Status FromJsonString(const std::string& text, const std::string& source,
                            google::protobuf::Message* message,
                            const SerializeOptions& options = {});

}  // namespace loom::args

#endif  // LOOM_ARGS_SERIALIZE_H_
