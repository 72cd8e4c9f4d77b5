#include "args/parser.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "args/field_value.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::args {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string TypeLabel(const FieldDescriptor* f) {
  const FieldSpec& spec = SpecOf(f);
  if (spec.choices_size() > 0) {
    std::string c = "{" + absl::StrJoin(spec.choices(), ",") + "}";
    return f->is_repeated() ? c + " [...]" : c;
  }
  switch (spec.kind()) {
    case KIND_BOOL:
      return "[BOOL]";
    case KIND_INT:
      return "INT";
    case KIND_FLOAT:
      return "FLOAT";
    case KIND_STEPS:
      return "STEPS";
    case KIND_LIST:
      return "STR [STR ...]";
    case KIND_DICT:
      return "JSON";
    case KIND_CONFIG:
      return "PATH|JSON";
    default:
      return "STR";
  }
}

}  // namespace

absl::Status ParsePythonBool(const std::string& text, bool* out) {
  std::string v = absl::AsciiStrToLower(text);
  if (v == "yes" || v == "true" || v == "t" || v == "y" || v == "1") {
    *out = true;
  } else if (v == "no" || v == "false" || v == "f" || v == "n" || v == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("Truthy value expected: got '", text,
                     "' but expected one of yes/no, true/false, t/f, y/n, 1/0 (case insensitive)."));
  }
  return absl::OkStatus();
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

ArgParser::ArgParser(Options options) : options_(std::move(options)) {}

ArgParser& ArgParser::AddGroup(std::string title, google::protobuf::Message* message) {
  groups_.emplace_back(std::move(title), message);
  return *this;
}

bool ArgParser::Visible(const FieldDescriptor* f) const {
  return options_.seq2seq || !SpecOf(f).seq2seq();
}

absl::Status ArgParser::CheckGroups() const {
  std::map<std::string, std::string> owner;
  for (const auto& [title, msg] : groups_) {
    const Descriptor* d = msg->GetDescriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const std::string& name = d->field(i)->name();
      auto [it, inserted] = owner.emplace(name, title);
      if (!inserted) {
        return absl::InternalError(absl::StrCat("argument --", name, " is defined by both ",
                                                it->second, " and ", title));
      }
    }
  }
  return absl::OkStatus();
}

bool ArgParser::Find(const std::string& raw, Target* target) const {
  std::string name = absl::StrReplaceAll(raw, {{"-", "_"}});
  for (const auto& [title, msg] : groups_) {
    const FieldDescriptor* f = msg->GetDescriptor()->FindFieldByName(name);
    if (f != nullptr && Visible(f)) {
      *target = {msg, f};
      return true;
    }
  }
  return false;
}

std::vector<std::string> ArgParser::AllFlagNames() const {
  std::vector<std::string> names;
  for (const auto& [title, msg] : groups_) {
    const Descriptor* d = msg->GetDescriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (!Visible(f)) continue;
      names.push_back(f->name());
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL && f->default_value_bool()) {
        names.push_back("no_" + f->name());
      }
    }
  }
  return names;
}

std::string ClosestName(const std::string& name, const std::vector<std::string>& candidates,
                        size_t below) {
  std::string best;
  for (const std::string& c : candidates) {
    if (const size_t d = EditDistance(name, c); d < below) below = d, best = c;
  }
  return best;
}

absl::Status ArgParser::UnknownFlag(const std::string& flag) const {
  std::string bare = flag;
  while (!bare.empty() && bare[0] == '-') bare.erase(0, 1);
  bare = absl::StrReplaceAll(bare, {{"-", "_"}});
  const std::string best = ClosestName(bare, AllFlagNames(), std::string::npos);
  std::string msg = absl::StrCat("unrecognized argument ", flag);
  if (!best.empty()) absl::StrAppend(&msg, "; did you mean --", best, "?");
  absl::StrAppend(&msg, " (see ", options_.program, " --help)");
  return absl::InvalidArgumentError(msg);
}

absl::Status ArgParser::Parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

absl::Status ArgParser::Parse(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(CheckGroups());
  if (args.size() == 1 && absl::EndsWith(args[0], ".json")) {
    ASSIGN_OR_RETURN(std::string text, base::ReadFile(args[0]));
    auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(args[0], ": not a JSON object of argument names to values"));
    }
    return ParseJson(j, args[0]);
  }
  size_t i = 0;
  while (i < args.size()) {
    const std::string& tok = args[i++];
    if (tok == "--help" || tok == "-h") {
      help_requested_ = true;
      continue;
    }
    if (!absl::StartsWith(tok, "--") || tok.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", tok, "': arguments are --name value pairs (see ",
          options_.program, " --help)"));
    }
    std::string name = tok.substr(2);
    std::vector<std::string> values;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      values.push_back(name.substr(eq + 1));
      name = name.substr(0, eq);
    } else {
      while (i < args.size() && !absl::StartsWith(args[i], "--")) values.push_back(args[i++]);
    }
    Target t;
    if (Find(name, &t)) {
      RETURN_IF_ERROR(SetFromStrings(t.message, t.field, values, "--" + t.field->name()));
      continue;
    }
    if (absl::StartsWith(name, "no_") && Find(name.substr(3), &t) &&
        t.field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL && t.field->default_value_bool()) {
      if (!values.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", tok, ": ignored explicit argument '", values[0], "'"));
      }
      t.message->GetReflection()->SetBool(t.message, t.field, false);
      continue;
    }
    return UnknownFlag("--" + name);
  }
  return absl::OkStatus();
}

absl::Status ArgParser::ParseJson(const nlohmann::ordered_json& object, const std::string& source) {
  RETURN_IF_ERROR(CheckGroups());
  for (const auto& [key, value] : object.items()) {
    Target t;
    if (!Find(key, &t)) {
      absl::Status s = UnknownFlag("--" + key);
      return absl::InvalidArgumentError(absl::StrCat(source, ": unknown key \"", key, "\"; ",
                                                     s.message()));
    }
    RETURN_IF_ERROR(SetFromJson(t.message, t.field, value, source));
  }
  return absl::OkStatus();
}

std::string ArgParser::Help() const {
  std::string out = absl::StrCat("usage: ", options_.program, " [--help] [--name VALUE ...]\n",
                                 "       ", options_.program, " ARGS.json\n");
  if (!options_.description.empty()) absl::StrAppend(&out, "\n", options_.description, "\n");
  for (const auto& [title, msg] : groups_) {
    absl::StrAppend(&out, "\n", title, ":\n");
    const Descriptor* d = msg->GetDescriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (!Visible(f)) continue;
      const FieldSpec& spec = SpecOf(f);
      absl::StrAppend(&out, "  --", f->name(), " ", TypeLabel(f), "\n      ", spec.doc());
      if (spec.required()) {
        absl::StrAppend(&out, " (required)");
      } else {
        absl::StrAppend(&out, " (default: ", spec.has_py_default() ? spec.py_default() : "None", ")");
      }
      switch (spec.support()) {
        case NOT_APPLICABLE:
          absl::StrAppend(&out, " [ignored by loom: ", spec.support_note(), "]");
          break;
        case UNSUPPORTED:
          absl::StrAppend(&out, " [not supported by loom: ", spec.support_note(), "]");
          break;
        case NOT_YET:
          absl::StrAppend(&out, " [not implemented in loom yet: ", spec.support_note(), "]");
          break;
        default:
          break;
      }
      if (spec.loom_only()) absl::StrAppend(&out, " [loom only: not an HF TrainingArguments field]");
      absl::StrAppend(&out, "\n");
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL && f->has_default_value() &&
          f->default_value_bool()) {
        absl::StrAppend(&out, "  --no_", f->name(), "\n      Sets ", f->name(), " to False.\n");
      }
    }
  }
  return out;
}

}  // namespace loom::args
