#include "args/field_value.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "args/parser.h"
#include "base/python_float.h"
#include "base/status_macros.h"

namespace loom::args {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string Quoted(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (const auto& s : items) q.push_back("'" + s + "'");
  return absl::StrJoin(q, ", ");
}

absl::Status CheckChoice(const FieldSpec& spec, const std::string& value, const std::string& flag) {
  if (spec.choices_size() == 0) return absl::OkStatus();
  for (const auto& c : spec.choices()) {
    if (c == value) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("argument ", flag, ": invalid choice: '", value, "' (choose from ",
                   Quoted({spec.choices().begin(), spec.choices().end()}), ")"));
}

absl::Status SetScalar(Message* m, const FieldDescriptor* f, const std::string& text,
                       const std::string& flag) {
  const Reflection* r = m->GetReflection();
  const FieldSpec& spec = SpecOf(f);
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool b;
      RETURN_IF_ERROR_CTX(ParsePythonBool(text, &b), "argument " + flag);
      r->SetBool(m, f, b);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_INT32: {
      auto v = ParsePythonInt(text);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", flag, ": invalid int value: '", text, "'"));
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
        r->SetInt64(m, f, *v);
      } else {
        r->SetInt32(m, f, static_cast<int32_t>(*v));
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      auto v = ParsePythonFloat(text);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", flag, ": invalid float value: '", text, "'"));
      }
      r->SetDouble(m, f, *v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (spec.kind() == KIND_DICT) {
        auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
          return absl::InvalidArgumentError(
              absl::StrCat("argument ", flag,
                           ": expected a JSON object such as '{\"key\": 1}', got '", text, "'"));
        }
        r->SetString(m, f, j.dump());
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(CheckChoice(spec, text, flag));
      r->SetString(m, f, text);
      return absl::OkStatus();
    }
    default:
      return absl::InternalError(
          absl::StrCat("field ", f->full_name(), " has an unsupported type"));
  }
}

}  // namespace

const FieldSpec& SpecOf(const FieldDescriptor* field) {
  return field->options().GetExtension(spec);
}

absl::StatusOr<int64_t> ParsePythonInt(const std::string& raw) {
  std::string text(absl::StripAsciiWhitespace(raw));
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.empty()) return absl::InvalidArgumentError("empty");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return absl::InvalidArgumentError("not an int");
  return static_cast<int64_t>(v);
}

absl::StatusOr<double> ParsePythonFloat(const std::string& raw) {
  std::string text(absl::StripAsciiWhitespace(raw));
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower.find("0x") != std::string::npos) {
    return absl::InvalidArgumentError("not a float");
  }
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end != '\0') return absl::InvalidArgumentError("not a float");
  return v;
}

std::string PythonFloat(double v) { return base::PythonFloatRepr(v); }

absl::Status SetFromStrings(Message* m, const FieldDescriptor* f,
                            const std::vector<std::string>& values, const std::string& flag) {
  const Reflection* r = m->GetReflection();
  const FieldSpec& spec = SpecOf(f);
  if (f->is_repeated()) {
    if (values.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", flag, ": expected at least one argument"));
    }
    r->ClearField(m, f);
    for (const auto& v : values) {
      for (absl::string_view piece : absl::StrSplit(v, ' ', absl::SkipWhitespace())) {
        std::string item(piece);
        RETURN_IF_ERROR(CheckChoice(spec, item, flag));
        r->AddString(m, f, item);
      }
    }
    return absl::OkStatus();
  }
  if (values.empty()) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      r->SetBool(m, f, true);  // bare --flag
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("argument ", flag, ": expected one argument"));
  }
  if (values.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "argument ", flag, ": expected one argument, got ", values.size(), ": ", Quoted(values)));
  }
  return SetScalar(m, f, values[0], flag);
}

absl::Status SetFromJson(Message* m, const FieldDescriptor* f, const nlohmann::ordered_json& v,
                         const std::string& where) {
  const Reflection* r = m->GetReflection();
  const FieldSpec& spec = SpecOf(f);
  const std::string name = where + ": key \"" + f->name() + "\"";
  if (v.is_null()) {
    r->ClearField(m, f);
    return absl::OkStatus();
  }
  auto type_error = [&](absl::string_view want) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected ", want, ", got ", v.dump()));
  };
  if (f->is_repeated()) {
    if (v.is_string()) return SetFromStrings(m, f, {v.get<std::string>()}, name);
    if (!v.is_array()) return type_error("a list of strings");
    std::vector<std::string> items;
    for (const auto& e : v) {
      if (!e.is_string()) return type_error("a list of strings");
      items.push_back(e.get<std::string>());
    }
    r->ClearField(m, f);
    if (items.empty()) return absl::OkStatus();
    return SetFromStrings(m, f, items, name);
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      if (v.is_boolean()) {
        r->SetBool(m, f, v.get<bool>());
      } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
        r->SetBool(m, f, v.get<int64_t>() == 1);
      } else if (v.is_string()) {
        return SetScalar(m, f, v.get<std::string>(), name);
      } else {
        return type_error("a bool");
      }
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_INT32:
      if (v.is_number_integer()) {
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
          r->SetInt64(m, f, v.get<int64_t>());
        } else {
          r->SetInt32(m, f, static_cast<int32_t>(v.get<int64_t>()));
        }
        return absl::OkStatus();
      }
      if (v.is_string()) return SetScalar(m, f, v.get<std::string>(), name);
      return type_error("an int");
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if (v.is_number()) {
        r->SetDouble(m, f, v.get<double>());
        return absl::OkStatus();
      }
      if (v.is_string()) return SetScalar(m, f, v.get<std::string>(), name);
      return type_error("a number");
    case FieldDescriptor::CPPTYPE_STRING:
      if (spec.kind() == KIND_DICT || spec.kind() == KIND_CONFIG) {
        if (v.is_object()) {
          r->SetString(m, f, v.dump());
          return absl::OkStatus();
        }
        if (spec.kind() == KIND_DICT) return type_error("an object");
      }
      if (!v.is_string()) return type_error("a string");
      return SetScalar(m, f, v.get<std::string>(), name);
    default:
      return absl::InternalError("unsupported field type for " + f->full_name());
  }
}

nlohmann::ordered_json GetAsJson(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  const FieldSpec& spec = SpecOf(f);
  if (f->is_repeated()) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (int i = 0; i < r->FieldSize(m, f); ++i) arr.push_back(r->GetRepeatedString(m, f, i));
    // Python None (label_names, optim_target_modules) vs an empty list (fsdp "", debug "").
    if (arr.empty() && spec.py_default() == "None") return nullptr;
    return arr;
  }
  if (!r->HasField(m, f) && !f->has_default_value()) {
    if (spec.py_default() == "{}") return nlohmann::ordered_json::object();
    return nullptr;
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double d = r->GetDouble(m, f);
      bool integral = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
      if (spec.kind() == KIND_STEPS && integral && d > 1) return static_cast<int64_t>(d);
      // Python keeps an int default of a float field (eval_delay=0) as an int.
      // (Compared by value, so a round trip through JSON keeps the int form.)
      if (f->has_default_value() && d == f->default_value_double() && integral &&
          spec.py_default().find('.') == std::string::npos &&
          spec.py_default().find('e') == std::string::npos) {
        return static_cast<int64_t>(d);
      }
      return d;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = r->GetString(m, f);
      if (spec.kind() == KIND_DICT || (spec.kind() == KIND_CONFIG && !s.empty() && s[0] == '{')) {
        auto j = nlohmann::ordered_json::parse(s, nullptr, false);
        if (!j.is_discarded()) return j;
      }
      return s;
    }
    default:
      return nullptr;
  }
}

void ConvertStrDict(nlohmann::ordered_json* dict) {
  if (!dict->is_object()) return;
  auto all_digits = [](absl::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  for (auto& [key, value] : dict->items()) {
    if (value.is_object()) {
      ConvertStrDict(&value);
      continue;
    }
    if (!value.is_string()) continue;
    const std::string s = value.get<std::string>();
    const std::string lower = absl::AsciiStrToLower(s);
    int64_t i = 0;
    double d = 0;
    if (lower == "true" || lower == "false") {
      value = lower == "true";
    } else if (all_digits(s)) {
      if (absl::SimpleAtoi(s, &i)) value = i;
    } else if (const size_t dot = s.find('.');
               dot != std::string::npos &&
               all_digits(absl::StrCat(s.substr(0, dot), s.substr(dot + 1))) &&
               absl::SimpleAtod(s, &d)) {
      value = d;
    }
  }
}

}  // namespace loom::args
