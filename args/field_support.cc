#include "args/field_support.h"

#include "absl/strings/str_cat.h"
#include "args/field_value.h"

namespace loom::args {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

absl::Status Refusal(const FieldDescriptor* f, const FieldSpec& spec, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", f->name(), " is ", what, ": ", spec.support_note(), ". Remove the flag."));
}

// --debug holds a list of options; each has its own status.
absl::Status CheckDebug(const TrainingArguments& args, const FieldDescriptor* f,
                        std::vector<std::string>* warnings) {
  for (const std::string& option : args.debug()) {
    if (option == "tpu_metrics_debug") {
      warnings->push_back(
          "--debug tpu_metrics_debug is ignored by loom: TPUs do not exist for loom (CPU and "
          "CUDA only)");
      continue;
    }
    return Refusal(f, SpecOf(f), "not implemented in loom yet");
  }
  return absl::OkStatus();
}

}  // namespace

Support FieldSupport(const FieldDescriptor* field) { return SpecOf(field).support(); }

bool HasNonDefaultValue(const TrainingArguments& args, const FieldDescriptor* field) {
  const auto* r = args.GetReflection();
  if (field->is_repeated() ? r->FieldSize(args, field) == 0 : !r->HasField(args, field)) {
    return false;
  }
  return GetAsJson(args, field) != GetAsJson(TrainingArguments::default_instance(), field);
}

absl::Status CheckFieldSupport(const TrainingArguments& args, std::vector<std::string>* warnings,
                               const TrainingArguments* resolved_defaults) {
  const Descriptor* d = args.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (!HasNonDefaultValue(args, f)) continue;
    if (resolved_defaults != nullptr &&
        GetAsJson(args, f) == GetAsJson(*resolved_defaults, f)) {
      continue;
    }
    const FieldSpec& spec = SpecOf(f);
    if (f->name() == "debug") {
      absl::Status s = CheckDebug(args, f, warnings);
      if (!s.ok()) return s;
      continue;
    }
    switch (spec.support()) {
      case IMPLEMENTED:
        break;
      case NOT_APPLICABLE:
        warnings->push_back(absl::StrCat("--", f->name(), " is ignored by loom: ", spec.support_note()));
        break;
      case UNSUPPORTED:
        return Refusal(f, spec, "not supported by loom");
      case NOT_YET:
        return Refusal(f, spec, "not implemented in loom yet");
      default:
        return absl::InternalError(absl::StrCat(
            "--", f->name(), " has no support status in args/training_args.proto (a loom bug)"));
    }
  }
  return absl::OkStatus();
}

std::string SupportTableTsv() {
  std::string out = "field\tsupport\tseq2seq\texample\tnote\n";
  const Descriptor* d = TrainingArguments::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const FieldSpec& spec = SpecOf(f);
    absl::StrAppend(&out, f->name(), "\t", SupportName(spec.support()), "\t",
                    spec.seq2seq() ? 1 : 0, "\t", spec.example_value(), "\t",
                    spec.support_note(), "\n");
  }
  return out;
}

const char* SupportName(Support support) {
  switch (support) {
    case IMPLEMENTED:
      return "implemented";
    case NOT_APPLICABLE:
      return "not applicable";
    case UNSUPPORTED:
      return "unsupported";
    case NOT_YET:
      return "not yet";
    default:
      return "unspecified";
  }
}

}  // namespace loom::args
