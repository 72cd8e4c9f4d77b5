#include "args/serialize.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "args/field_value.h"
#include "args/parser.h"
#include "base/status_macros.h"
#include "hub/hub_config.h"

namespace loom::args {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using json = nlohmann::ordered_json;

bool IsToken(const FieldDescriptor* f) { return absl::EndsWith(f->name(), "_token"); }

std::string TokenPlaceholder(const FieldDescriptor* f) {
  return "<" + absl::AsciiStrToUpper(f->name()) + ">";
}

// Credentials inside URLs (a --hub_model_id such as https://user:secret@host/repo) never leave
// the process through a dump or an args file.
json Redacted(json v) {
  if (v.is_string()) return hub::RedactUrlCredentials(v.get<std::string>());
  if (v.is_array()) {
    for (json& e : v) e = Redacted(std::move(e));
  }
  return v;
}

bool Included(const FieldDescriptor* f, const SerializeOptions& o) {
  const FieldSpec& spec = SpecOf(f);
  return (o.seq2seq || !spec.seq2seq()) && (o.loom_fields || !spec.loom_only());
}

}  // namespace

json ToDict(const google::protobuf::Message& m, const SerializeOptions& options) {
  json out = json::object();
  const Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (!Included(f, options)) continue;
    if (IsToken(f)) {
      out[f->name()] = TokenPlaceholder(f);
      continue;
    }
    json v = Redacted(GetAsJson(m, f));
    if (f->name() == "report_to" && v == json::array({"none"})) v = json::array();
    out[f->name()] = std::move(v);
  }
  return out;
}

std::string ToJsonString(const google::protobuf::Message& m, const SerializeOptions& options) {
  return ToDict(m, options).dump(2, ' ', /*ensure_ascii=*/true);
}

absl::Status FromDict(const json& dict, const std::string& source,
                      google::protobuf::Message* m, const SerializeOptions& options) {
  if (!dict.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": expected a JSON object"));
  }
  m->Clear();
  const Descriptor* d = m->GetDescriptor();
  for (const auto& [key, value] : dict.items()) {
    const FieldDescriptor* f = d->FindFieldByName(key);
    if (f == nullptr || !Included(f, options)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": unknown key \"", key, "\" for ", d->name()));
    }
    if (IsToken(f) && value.is_string() && value.get<std::string>() == TokenPlaceholder(f)) {
      continue;  // obfuscated by ToDict: the token itself was never written
    }
    if (f->name() == "report_to" && value.is_array() && value.empty()) {
      RETURN_IF_ERROR(SetFromJson(m, f, json::array({"none"}), source));
      continue;
    }
    RETURN_IF_ERROR(SetFromJson(m, f, value, source));
  }
  return absl::OkStatus();
}

absl::Status FromJsonString(const std::string& text, const std::string& source,
                            google::protobuf::Message* m, const SerializeOptions& options) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(source + ": not valid JSON");
  return FromDict(j, source, m, options);
}

}  // namespace loom::args
