// Typed access to one field of an argument message, by its (loom.args.spec) kind: the
// shared core of the CLI parser, the JSON reader/writer and training_args.bin.
//
//   const FieldSpec& spec = SpecOf(field);
//   RETURN_IF_ERROR(SetFromStrings(&msg, field, {"2e-5"}, "--learning_rate"));
//   nlohmann::ordered_json v = GetAsJson(msg, field);   // 2e-05; null when unset (Python None)
#ifndef LOOM_ARGS_FIELD_VALUE_H_
#define LOOM_ARGS_FIELD_VALUE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/field_spec.pb.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace loom::args {

// The field's spec; an empty spec for fields without the option.
const FieldSpec& SpecOf(const google::protobuf::FieldDescriptor* field);

// Sets the field from command-line words (after the flag). `flag` names it in errors.
absl::Status SetFromStrings(google::protobuf::Message* message,
                            const google::protobuf::FieldDescriptor* field,
                            const std::vector<std::string>& values, const std::string& flag);

// Sets the field from a JSON value (null clears it: Python None).
absl::Status SetFromJson(google::protobuf::Message* message,
                         const google::protobuf::FieldDescriptor* field,
                         const nlohmann::ordered_json& value, const std::string& where);

// The field's value as Python holds it: null when unset and without default; dict kinds as
// JSON objects (a KIND_CONFIG path stays a string); lists as arrays. KIND_STEPS values are
// ints when integral and > 1 (HF turns them into int), floats otherwise.
nlohmann::ordered_json GetAsJson(const google::protobuf::Message& message,
                                 const google::protobuf::FieldDescriptor* field);

// HF's _convert_str_dict, which TrainingArguments.__post_init__ (transformers 4.38+) applies to
// the dict fields (accelerator_config, fsdp_config, deepspeed, gradient_checkpointing_kwargs,
// lr_scheduler_kwargs) given as JSON text: in `dict` and the dicts nested in it (not in lists),
// a string "true"/"false" (any case) becomes a bool, an all-digit string an int ("007" -> 7),
// and a digit string with one '.' ("1.5", ".5", "5.") a float. loom keeps strings of more digits
// than int64 holds (Python would make a big int). Other values are left alone.
void ConvertStrDict(nlohmann::ordered_json* dict);

// Python's float repr (shortest round trip): 5e-05, 3.0, 0.1, 1e-08, inf, nan.
std::string PythonFloat(double v);

// Parses a Python int / float literal as argparse's int() / float() would.
absl::StatusOr<int64_t> ParsePythonInt(const std::string& text);
absl::StatusOr<double> ParsePythonFloat(const std::string& text);

}  // namespace loom::args

#endif  // LOOM_ARGS_FIELD_VALUE_H_
