// What loom does with each TrainingArguments field: the `support` column of the schema table
// (training_args.proto; args/field_spec.proto's Support), applied to resolved arguments so that
// no flag is accepted and silently ignored.
//
// Contract:
//   - Every TrainingArguments field carries one Support value (a test walks the descriptor):
//       IMPLEMENTED     does what HF does;
//       NOT_APPLICABLE  accepted and changes nothing here (TPU, SageMaker, Ray, ...): a
//                       warning "--<field> is ignored by loom: <note>";
//       UNSUPPORTED     cannot exist in a C++ trainer: InvalidArgument
//                       "--<field> is not supported by loom: <note>. Remove the flag.";
//       NOT_YET         planned, not built: InvalidArgument
//                       "--<field> is not implemented in loom yet: <note>. Remove the flag."
//   - A field counts as given when it holds a value other than its default (an explicit
//     `--push_to_hub false` is fine) and, when `resolved_defaults` is given, other than the
//     value PostInit gives it when nothing is passed (fsdp_config is filled with HF's
//     defaults even without --fsdp_config). The first UNSUPPORTED / NOT_YET field in schema order
//     is the error; every NOT_APPLICABLE field adds one warning. Values are never printed
//     (hub tokens must not reach logs).
//   - `--debug`: tpu_metrics_debug alone is NOT_APPLICABLE (a warning); underflow_overflow is
//     NOT_YET.
//
// Example:
//   std::vector<std::string> warnings;
//   RETURN_IF_ERROR(CheckFieldSupport(args, &warnings));
#ifndef LOOM_ARGS_FIELD_SUPPORT_H_
#define LOOM_ARGS_FIELD_SUPPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"

namespace loom::args {

// The Support value of a field of TrainingArguments (SUPPORT_UNSPECIFIED when it has none).
Support FieldSupport(const google::protobuf::FieldDescriptor* field);

// True when `args` holds a value for `field` that differs from its default.
bool HasNonDefaultValue(const TrainingArguments& args,
                        const google::protobuf::FieldDescriptor* field);

// Applies the table to `args` (see the header comment). `warnings` receives one line per
// NOT_APPLICABLE field that was given.
absl::Status CheckFieldSupport(const TrainingArguments& args, std::vector<std::string>* warnings,
                               const TrainingArguments* resolved_defaults = nullptr);

// "implemented", "not applicable", "unsupported", "not yet" (for tables and --help).
const char* SupportName(Support support);

// The whole table as tab-separated lines: a header "field support seq2seq example note", then
// one line per field in schema order (seq2seq 1 for Seq2SeqTrainingArguments-only fields).
std::string SupportTableTsv();

}  // namespace loom::args

#endif  // LOOM_ARGS_FIELD_SUPPORT_H_
